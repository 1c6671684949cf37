"""Stand-in for the C++ extension's ``DataFormats``: the device dtype of a ``TensorArg``."""

import enum


class DataFormats(enum.Enum):
    IEEE_FP32 = "float32"
    IEEE_FP16 = "float16"
    BFLOAT16 = "bfloat16"
    SEN169_FP16 = "sen169_fp16"  # Spyre's own fp16 layout
    UNKNOWN = "unknown"

    @classmethod
    def of(cls, torch_dtype: str) -> "DataFormats":
        return next((f for f in cls if f.value == torch_dtype), cls.UNKNOWN)
