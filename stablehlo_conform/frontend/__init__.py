"""The one package that imports the official MLIR / StableHLO Python bindings.

It reads ``.mlir`` text, MLIR bytecode and StableHLO portable artifacts and
lowers each module into :mod:`stablehlo_conform.program` objects. One module
per job, in the order they depend on each other:

- :mod:`.chunks`: files and text split on ``// -----`` (like ``-split-input-file``);
- :mod:`.sugar`: the check dialect's custom syntax rewritten into generic op
  form in plain text (the ``check`` dialect is not registered in the bindings'
  context);
- :mod:`.bindings`: the bindings and their contexts (jaxlib's; IREE's for
  ``!quant.uniform`` programs);
- :mod:`.parse`: parsing and verifying with diagnostics, large literals and the
  memory budget of constants;
- :mod:`.lower`: parsed modules lowered into program objects;
- :mod:`.load`: loading files, text and bytecode; StableHLO versions and
  portable artifacts;
- :mod:`.rewrite`: programs prepared for native backends; the reference interpreter;
- :mod:`.edit`: the reducer's edits.

Users import this package (``frontend.load_text``, ``frontend.prepare_entry``,
...): every name of the modules is here. To use another provider of the
bindings (a standalone ``mlir`` wheel with the StableHLO dialect), change the
imports in :func:`.bindings._bindings`.
"""

from __future__ import annotations

from .chunks import (
    BYTECODE_MAGIC, Chunk, SPLIT_MARK, _CODE_LINE_RE, _has_code, _split_marks, read_chunks, split_text,
)
from .sugar import (
    UnclosedCheck, _CHECK_HEAD, _CHECK_PROPS_RE, _CHECK_START, _check_starts, _depth, _rewrite_check_stmt,
    _split_type_suffix, _strip_comment, _sugar_free, rewrite_check_sugar,
)
from .bindings import (
    _IREE_CHECK, _IREE_CHECK_RE, _bindings, _iree_bindings, _iree_state, _is_iree_module, _isa, _lock,
    _register_sdy, _sdy_module, _state, _string_attr, new_context, provider_version,
)
from .parse import (
    LARGE_LITERAL, MAX_NESTING, _ConstantError, _HEX_BLOCK, _HEX_OPEN, _LITERAL_NAME, _LITERAL_REF_RE, _LOC_RE,
    _NEST_TOKEN_RE, _PARSED_BUFFER, _budget, _check_budget, _diagnostics, _extract_literals, _format_diag,
    _hex_to_bytes, _line_col, _literal_ids, _parse_binary, _parse_chunk, _parse_iree, _verified, check_nesting,
    chunk_source, memory_budget, parse_chunk,
)
from .lower import (
    _Lowerer, _jaxlib_attr, lower_module, parse_attribute,
)
from .load import (
    known_dialect, load, load_bytes, load_file, load_text, needed_stablehlo_version, op_names, registered_ops,
    serialize_portable_artifact, stablehlo_minimum_version, stablehlo_version, to_bytecode, version_tuple,
)
from .rewrite import (
    ENTRY_ALIAS, _is_check_op, eval_reference, op_texts, prepare_entry, refine_shapes,
)
from .edit import (
    _EFFECTFUL, _TERMINATOR_SUFFIXES, _apply_edit, _clone_region_body, _dce, _drop_carried, _entry_ops,
    _inline_calls, _is_terminator_name, _module_funcs, _parse_for_edit, _prune_functions, _replace_return, _retype,
    _set_function_type, count_ops, dense_attr, edit_module, op_inventory,
)

__all__ = [
    'BYTECODE_MAGIC', 'Chunk', 'SPLIT_MARK', '_CODE_LINE_RE', '_has_code', '_split_marks', 'read_chunks',
    'split_text', 'UnclosedCheck', '_CHECK_HEAD', '_CHECK_PROPS_RE', '_CHECK_START', '_check_starts', '_depth',
    '_rewrite_check_stmt', '_split_type_suffix', '_strip_comment', '_sugar_free', 'rewrite_check_sugar',
    '_IREE_CHECK', '_IREE_CHECK_RE', '_bindings', '_iree_bindings', '_iree_state', '_is_iree_module', '_isa',
    '_jaxlib_attr', '_lock', '_register_sdy', '_sdy_module', '_state', '_string_attr', 'new_context',
    'provider_version', 'LARGE_LITERAL', 'MAX_NESTING', '_ConstantError', '_HEX_BLOCK', '_HEX_OPEN',
    '_LITERAL_NAME', '_LITERAL_REF_RE', '_LOC_RE', '_NEST_TOKEN_RE', '_PARSED_BUFFER', '_budget', '_check_budget',
    '_diagnostics', '_extract_literals', '_format_diag', '_hex_to_bytes', '_line_col', '_literal_ids',
    '_parse_binary', '_parse_chunk', '_parse_iree', '_verified', 'check_nesting', 'chunk_source', 'memory_budget',
    'parse_chunk', '_Lowerer', 'lower_module', 'parse_attribute', 'known_dialect', 'load', 'load_bytes',
    'load_file', 'load_text', 'needed_stablehlo_version', 'op_names', 'registered_ops',
    'serialize_portable_artifact', 'stablehlo_minimum_version', 'stablehlo_version', 'to_bytecode',
    'version_tuple', 'ENTRY_ALIAS',
    '_is_check_op', 'eval_reference', 'op_texts', 'prepare_entry', 'refine_shapes', '_EFFECTFUL',
    '_TERMINATOR_SUFFIXES', '_apply_edit', '_clone_region_body', '_dce', '_drop_carried', '_entry_ops',
    '_inline_calls', '_is_terminator_name', '_module_funcs', '_parse_for_edit', '_prune_functions',
    '_replace_return', '_retype', '_set_function_type', 'count_ops', 'dense_attr', 'edit_module', 'op_inventory',
]
