# Shared helpers of the embedding tests: an independent decoder of the fused row layouts (float64),
# the float reference (torch.nn.functional.embedding_bag on the decoded table) and tolerances.
import torch
import torch.nn.functional as F

Q = torch.ops.quantized
P = torch.ops.qplugin


def decode(table, bits):
    """float64 [rows, dim] of a fused table (8-bit: codes, fp32 scale, fp32 bias; 4-bit: nibbles,
    fp16 scale, fp16 bias; 2-bit: four codes per byte, element 4k + j in bits 2j..2j+1 of byte
    k, fp16 scale, fp16 bias), decoded here without any op under test."""
    t = table.contiguous()
    if bits == 8:
        codes = t[:, :-8].double()
        scale = t[:, -8:-4].contiguous().view(torch.float32).double()
        bias = t[:, -4:].contiguous().view(torch.float32).double()
    elif bits == 2:
        packed = t[:, :-4]
        codes = torch.stack([(packed >> (2 * j)) & 3 for j in range(4)], dim=2)
        codes = codes.reshape(t.shape[0], -1).double()
        scale = t[:, -4:-2].contiguous().view(torch.float16).double()
        bias = t[:, -2:].contiguous().view(torch.float16).double()
    else:
        packed = t[:, :-4]
        codes = torch.stack([packed & 15, packed >> 4], dim=2).reshape(t.shape[0], -1).double()
        scale = t[:, -4:-2].contiguous().view(torch.float16).double()
        bias = t[:, -2:].contiguous().view(torch.float16).double()
    return codes * scale + bias


_NAME = {8: "byte", 4: "4bit", 2: "2bit"}


def prepack(w, bits, *args):
    return getattr(P, f"embedding_bag_{_NAME[bits]}_prepack")(w, *args)


def torch_prepack(w, bits, *args):
    return getattr(Q, f"embedding_bag_{_NAME[bits]}_prepack")(w, *args)


def unpack(t, bits):
    return getattr(P, f"embedding_bag_{_NAME[bits]}_unpack")(t)


def torch_unpack(t, bits):
    return getattr(Q, f"embedding_bag_{_NAME[bits]}_unpack")(t)


def rowwise(bits):
    return getattr(P, f"embedding_bag_{_NAME[bits]}_rowwise_offsets")


def torch_rowwise(bits):
    return getattr(Q, f"embedding_bag_{_NAME[bits]}_rowwise_offsets")


MODES = {0: "sum", 1: "mean", 2: "max"}


def float_bag(table, bits, indices, offsets, mode, psw=None, include_last_offset=False,
              padding_idx=None):
    """torch.nn.functional.embedding_bag (float64) on the decoded table."""
    w = decode(table, bits)
    if offsets is None:
        return F.embedding_bag(indices.long(), w, mode=MODES[mode],
                               per_sample_weights=None if psw is None else psw.double(),
                               padding_idx=padding_idx)
    return F.embedding_bag(indices.long(), w, offsets.long(), mode=MODES[mode],
                           per_sample_weights=None if psw is None else psw.double(),
                           include_last_offset=include_last_offset, padding_idx=padding_idx)


def assert_bag_close(out, ref, table, bits, indices, psw=None):
    """out (fp32) within float32 rounding of ref (float64): the tolerance scales with the
    magnitudes summed (sum over the bag of |scale * q| + |bias|, bounded by the table's max |row
    value| times the bag length)."""
    assert out.dtype == torch.float32 and out.shape == ref.shape, (out.shape, ref.shape)
    w = decode(table, bits)
    mag = w.abs().max().item() if w.numel() else 1.0
    wmax = 1.0 if psw is None else max(1.0, psw.abs().max().item())
    n = max(1, indices.numel())
    tol = 4e-7 * mag * wmax * n + 1e-6
    diff = (out.double() - ref).abs().max().item() if out.numel() else 0.0
    assert diff <= tol, f"max |diff| {diff} > tol {tol}"
