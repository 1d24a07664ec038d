"""Running test programs and comparing results, in wings that import one way:

- :mod:`.records`: results and the files that hold them (no MLIR, engine or backend);
- :mod:`.reports`, :mod:`.backends`, :mod:`.programs`: rendering records, running
  programs, what programs bring (inputs, recipes, expectations);
- :mod:`.judge`: who is right;
- :mod:`.suite`: the tests of a file and the worker processes that run them;
- :mod:`.campaigns`: fuzzing, reducing, accuracy tables, plugin reports.

``tests/test_layers.py`` holds the order.
"""
