"""Exceptions of the Python binding: one class per family of fa4_status, all under Fa4Error.

Each carries what the library recorded on its context at the failing call: the status (number and
name), the message, the 1-based line and column in the mod source (0 when not applicable) and the
compile log. Errors raised by the Python side itself (a library that cannot be found, a Python mod
that cannot be translated) use the same classes with status None.
"""


class Fa4Error(RuntimeError):
    """Base of every fa4jit error."""

    def __init__(self, message, status=None, status_name=None, line=0, column=0, compile_log="",
                 source=None):
        self.message = message
        self.status = status
        self.status_name = status_name
        self.line = line
        self.column = column
        self.compile_log = compile_log or ""
        self.source = source  # the mod source the library was given, when there was one
        super().__init__(self._render())

    def _render(self):
        text = self.message
        if self.status_name:
            text = f"{self.status_name}: {text}"
        if self.line and f":{self.line}:" not in self.message:
            text += f" (line {self.line}, column {self.column})"
        if self.compile_log:
            text += "\ncompile log:\n" + self.compile_log
        return text


class LibraryNotFoundError(Fa4Error, OSError):
    """libfa4jit could not be found or loaded, or is of another version."""


class InvalidArgumentError(Fa4Error, ValueError):
    """A call's arguments were refused: shapes, strides, dtypes, alignment, aux values, handles."""


class ModError(Fa4Error, ValueError):
    """The mod source failed parsing, checking or a limit (FA4_ERR_MOD_*)."""


class TranslationError(ModError):
    """A Python score_mod/mask_mod uses something that has no equivalent in the mod language.

    `operation` names it (e.g. "torch.softmax"); `filename` and `line` point at the user's code.
    """

    def __init__(self, message, operation=None, filename=None, line=0, source_line=None):
        self.operation = operation
        self.filename = filename
        self.source_line = source_line
        super().__init__(message, status=None, status_name=None, line=line, column=0)

    def _render(self):
        where = ""
        if self.filename:
            where = f"{self.filename}:{self.line}: " if self.line else f"{self.filename}: "
        text = f"{where}{self.message}"
        if self.source_line:
            text += "\n    " + self.source_line.strip()
        return text


class UnsupportedError(Fa4Error, NotImplementedError):
    """A configuration fa4jit does not support (dtype, head dim, arch, feature)."""


class CompilerError(Fa4Error):
    """NVRTC could not be used, or rejected generated code (a bug in fa4jit: the log says more)."""


class CudaError(Fa4Error):
    """The CUDA driver is missing, has no device, or failed a call, a module load or a launch."""


class CacheError(Fa4Error):
    """A kernel cache or file input/output error surfaced to the caller."""


class Fa4MemoryError(Fa4Error, MemoryError):
    """The library ran out of host memory."""


class InternalError(Fa4Error):
    """A bug in fa4jit."""


# Status name -> class. Statuses not listed (none today) map to Fa4Error.
_FAMILY = {
    "FA4_ERR_INVALID_ARGUMENT": InvalidArgumentError,
    "FA4_ERR_NULL_HANDLE": InvalidArgumentError,
    "FA4_ERR_STRUCT_SIZE": InvalidArgumentError,
    "FA4_ERR_OUT_OF_MEMORY": Fa4MemoryError,
    "FA4_ERR_MOD_SYNTAX": ModError,
    "FA4_ERR_MOD_CHECK": ModError,
    "FA4_ERR_MOD_LIMIT": ModError,
    "FA4_ERR_UNSUPPORTED": UnsupportedError,
    "FA4_ERR_NVRTC": CompilerError,
    "FA4_ERR_NVRTC_UNAVAILABLE": CompilerError,
    "FA4_ERR_NO_DRIVER": CudaError,
    "FA4_ERR_NO_DEVICE": CudaError,
    "FA4_ERR_CUDA": CudaError,
    "FA4_ERR_MODULE_LOAD": CudaError,
    "FA4_ERR_LAUNCH": CudaError,
    "FA4_ERR_SHAPE": InvalidArgumentError,
    "FA4_ERR_STRIDE": InvalidArgumentError,
    "FA4_ERR_DTYPE": InvalidArgumentError,
    "FA4_ERR_ALIGNMENT": InvalidArgumentError,
    "FA4_ERR_AUX": InvalidArgumentError,
    "FA4_ERR_WORKSPACE": InvalidArgumentError,
    "FA4_ERR_IO": CacheError,
    "FA4_ERR_CACHE": CacheError,
    "FA4_ERR_ARCH": UnsupportedError,
    "FA4_ERR_WRONG_KERNEL": InvalidArgumentError,
    "FA4_ERR_INTERNAL": InternalError,
}


def error_class(status_name):
    """The exception class for a status name such as "FA4_ERR_SHAPE"."""
    return _FAMILY.get(status_name, Fa4Error)
