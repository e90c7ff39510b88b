"""The fixed vocabularies entries draw from: categories and systems."""

from __future__ import annotations

from typing import NamedTuple


class Term(NamedTuple):
    """A named member of a vocabulary, with the sentence its page opens with."""

    name: str
    description: str


CATEGORIES: dict[str, Term] = {
    "communication": Term(
        "Communication",
        "Collectives, transports and rendezvous: the failure shows up where ranks talk to each "
        "other, whether or not that is where it started.",
    ),
    "configuration": Term(
        "Configuration",
        "Settings, versions and launch arguments that do not agree with each other or with the hardware.",
    ),
    "data": Term(
        "Data",
        "Input pipelines, loaders, shared memory and the shape of what is fed to the model.",
    ),
    "hardware": Term(
        "Hardware",
        "GPUs, memory, links and hosts that misbehave; the fix is usually a reset, a drain or "
        "a replacement rather than a code change.",
    ),
    "memory": Term(
        "Memory",
        "Device and host memory exhaustion, fragmentation and the allocators between them.",
    ),
    "numerics": Term(
        "Numerics",
        "Overflow, underflow, NaN and divergence: failures that often print nothing and show only in the metrics.",
    ),
    "performance": Term(
        "Performance",
        "Jobs that run but run slowly: recompilation, fallbacks and wasted communication.",
    ),
    "software": Term(
        "Software",
        "Bugs and invariants violated in the training code or the libraries under it.",
    ),
}

SYSTEMS: dict[str, Term] = {
    "nccl": Term("NCCL", "NVIDIA's collective communication library."),
    "infiniband": Term("InfiniBand and SHARP", "The RDMA fabric, its NICs and in-network reduction."),
    "pytorch": Term("PyTorch", "The PyTorch core: tensors, autograd and the CUDA caching allocator."),
    "pytorch-distributed": Term(
        "PyTorch distributed", "torch.distributed: c10d process groups, stores and the NCCL watchdog."
    ),
    "torchrun": Term("torchrun", "PyTorch's elastic launcher and its rendezvous."),
    "ddp": Term("DDP", "PyTorch DistributedDataParallel."),
    "fsdp": Term("FSDP", "PyTorch FullyShardedDataParallel."),
    "cuda": Term("CUDA", "The CUDA runtime and driver API as seen from a training process."),
    "cublas": Term("cuBLAS", "NVIDIA's dense linear algebra library."),
    "cudnn": Term("cuDNN", "NVIDIA's deep learning primitives library."),
    "xid": Term("NVIDIA Xid", "Errors the NVIDIA kernel driver reports in the kernel log."),
    "deepspeed": Term("DeepSpeed", "Microsoft DeepSpeed: ZeRO, offload and its fp16 engine."),
    "megatron": Term("Megatron-LM", "NVIDIA Megatron-LM and Megatron Core model parallelism."),
    "transformers": Term("Transformers", "Hugging Face Transformers and its Trainer."),
    "accelerate": Term("Accelerate", "Hugging Face Accelerate."),
    "tokenizers": Term("Tokenizers", "Hugging Face Tokenizers."),
    "vllm": Term("vLLM", "The vLLM inference engine."),
    "dataloader": Term("DataLoader", "torch.utils.data loaders, workers and shared memory."),
    "mixed-precision": Term("Mixed precision", "fp16 and bf16 training: loss scaling, autocast and optimizer state."),
    "optimizer": Term("Optimizers", "Adam and friends, gradient clipping and learning-rate schedules."),
    "checkpointing": Term("Checkpointing", "Saving and loading model and optimizer state."),
    "torch-compile": Term("torch.compile", "TorchDynamo, Inductor and Triton code generation."),
    "linux": Term("Linux host", "The kernel, cgroups, limits and file systems under the job."),
    "gpu-hardware": Term("GPU hardware", "The GPU board, its memory and its links."),
}
