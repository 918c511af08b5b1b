"""fa4jit for PyTorch: a FlexAttention-compatible backend on fa4jit's JIT-compiled kernels.

    import fa4jit
    out = fa4jit.flex_attention(q, k, v, score_mod=my_score_mod, block_mask=mask)
    fa4jit.enable()   # route torch.nn.attention.flex_attention.flex_attention to fa4jit

Mods are Python functions (translated to the mod language), mod source text, or shipped mod names.
The binding is ctypes only; the library is found through FA4JIT_LIBRARY, the package's lib/, or a
build tree of the source checkout (see fa4jit._lib). Importing needs no torch; attention does.
"""

from ._ctypes import VERSION_NUMBER as HEADER_VERSION_NUMBER
from ._core import AuxInfo, CacheConfig, Context, Kernel, KernelInfo, ProgramInfo
from ._eval import evaluate
from ._mods import ModSourceMask, shipped_mod_source, shipped_mods
from .api import (
    KERNEL_OPTIONS,
    cache_config,
    check,
    clear_kernels,
    compile,
    configure_cache,
    context,
    create_block_mask,
    flex_attention,
    varlen_attention,
)
from .enable import disable, enable, is_enabled, original_flex_attention
from .errors import (
    CacheError,
    CompilerError,
    CudaError,
    Fa4Error,
    Fa4MemoryError,
    InternalError,
    InvalidArgumentError,
    LibraryNotFoundError,
    ModError,
    TranslationError,
    UnsupportedError,
)

__version__ = "0.1.0"


def library_path():
    """Path of the libfa4jit this process uses (loads it)."""
    from . import _lib
    return _lib.path()


def library_version():
    """The loaded library's version string."""
    from . import _lib
    return _lib.load().fa4_version_string().decode()


def last_kernel():
    """The Kernel (with .info: path, registers, spills, cache result) of the latest attention
    launch made by this thread, forward or backward; None before any. Needs torch."""
    from ._ops import last_kernel as _last_kernel
    return _last_kernel()


def translate_mods(score_mod=None, mask_mod=None):
    """The mod-language Translation (.source, .aux) of Python mods; needs torch."""
    from .translate import translate as _translate
    return _translate(score_mod, mask_mod)


__all__ = [
    "flex_attention", "varlen_attention", "evaluate", "create_block_mask", "compile", "check", "enable",
    "disable", "is_enabled", "original_flex_attention", "configure_cache", "cache_config",
    "clear_kernels", "context", "translate_mods", "last_kernel", "shipped_mods",
    "shipped_mod_source", "ModSourceMask", "library_path", "library_version", "KERNEL_OPTIONS",
    "Context", "Kernel", "KernelInfo", "ProgramInfo", "AuxInfo", "CacheConfig", "Fa4Error",
    "LibraryNotFoundError", "InvalidArgumentError", "ModError", "TranslationError",
    "UnsupportedError", "CompilerError", "CudaError", "CacheError", "Fa4MemoryError",
    "InternalError", "HEADER_VERSION_NUMBER",
]
