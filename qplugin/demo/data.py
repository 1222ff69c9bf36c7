"""The demo's image-classification set, generated procedurally and deterministically (no
downloads): 10 classes of 64x64 RGB images -- stripes in four orientations, checkerboard, dots, rings,
rays, disk, grid -- at random position, size, phase, colours, with Gaussian noise. Same seed, same images.
Changes with: qplugin/demo/run.py (sizes), tests/test_main.py.
"""
import math
from typing import Tuple

import torch

__all__ = ["CLASSES", "make_dataset", "batches"]

NOISE = 0.12  # standard deviation of the pixel noise (images in [0, 1] before it)
CLASSES = ("stripes 0°", "stripes 45°", "stripes 90°", "stripes 135°", "checkerboard", "dots",
           "rings", "rays", "disk", "grid")


def make_dataset(n: int, seed: int, size: int = 64) -> Tuple[torch.Tensor, torch.Tensor]:
    """(images [n, 3, size, size] float32 channels_last, normalised; labels [n] int64), balanced
    over the classes and shuffled. Deterministic for a given (n, seed, size)."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % len(CLASSES)
    labels = labels[torch.randperm(n, generator=g)]

    def u(lo, hi, *shape):
        return lo + (hi - lo) * torch.rand(n, *shape, generator=g)

    lin = torch.linspace(-1.0, 1.0, size)
    yy, xx = lin.view(1, size, 1), lin.view(1, 1, size)
    # Per-image parameters (drawn for every image so the stream does not depend on the labels).
    cx, cy = u(-0.3, 0.3, 1, 1), u(-0.3, 0.3, 1, 1)
    radius = u(0.45, 0.75, 1, 1)
    jitter = u(-10.0, 10.0, 1, 1) * (math.pi / 180)
    freq, phase = u(3.0, 6.0, 1, 1), u(0.0, 2 * math.pi, 1, 1)
    x, y = xx - cx, yy - cy

    def soft(d):  # soft inside-mask of a signed distance d < 0 (1-2 pixels of antialiasing)
        return torch.sigmoid(-d * size / 2)

    masks = torch.empty(n, size, size)
    for k in range(len(CLASSES)):
        sel = labels == k
        if not sel.any():
            continue
        xs, ys, r, f, ph = x[sel], y[sel], radius[sel], freq[sel], phase[sel]
        if k < 4:  # sine stripes, oriented at k * 45 degrees (+- 10)
            th = k * math.pi / 4 + jitter[sel]
            m = 0.5 + 0.5 * torch.sin(math.pi * f * (xx * torch.cos(th) + yy * torch.sin(th)) + ph)
        elif k == 4:  # checkerboard
            m = 0.5 + 0.5 * (torch.sin(math.pi * f / 2 * (xx + ph)) *
                             torch.sin(math.pi * f / 2 * (yy + ph))).sign()
        elif k == 5:  # a grid of dots
            m = soft(torch.sqrt(torch.sin(math.pi * f / 2 * (xx + ph)) ** 2 +
                                torch.sin(math.pi * f / 2 * (yy + ph)) ** 2) - 0.6)
        elif k == 6:  # concentric rings around a random centre
            m = 0.5 + 0.5 * torch.sin(math.pi * f * torch.sqrt(xs ** 2 + ys ** 2) + ph)
        elif k == 7:  # rays from a random centre
            m = 0.5 + 0.5 * torch.sin(torch.round(f + 3) * torch.atan2(ys, xs) + ph)
        elif k == 8:  # disk
            m = soft(torch.sqrt(xs ** 2 + ys ** 2) - r)
        else:  # a grid of thin lines
            m = soft(torch.minimum(torch.sin(math.pi * f / 2 * (xx + ph)).abs(),
                                   torch.sin(math.pi * f / 2 * (yy + ph)).abs()) - 0.2)
        masks[sel] = m
    bg = u(0.0, 0.5, 3, 1, 1)
    fg = bg + u(0.3, 0.5, 3, 1, 1)
    swap = torch.rand(n, 1, 1, 1, generator=g) < 0.5
    bg, fg = torch.where(swap, fg, bg), torch.where(swap, bg, fg)
    m = masks.unsqueeze(1)
    # bg + (fg - bg) * m + noise, normalised to about zero mean and unit variance; in place
    # (this is the bulk of the generation time).
    images = torch.randn(n, 3, size, size, generator=g).mul_(NOISE)
    images.addcmul_(fg - bg, m).add_(bg).sub_(0.5).div_(0.3)
    images = images.contiguous(memory_format=torch.channels_last)
    return images, labels


def batches(images: torch.Tensor, labels: torch.Tensor, batch_size: int, shuffle_seed=None):
    """Yields (images, labels) batches; shuffled with `shuffle_seed` when given."""
    n = images.shape[0]
    order = (torch.randperm(n, generator=torch.Generator().manual_seed(shuffle_seed))
             if shuffle_seed is not None else torch.arange(n))
    for i in range(0, n, batch_size):
        idx = order[i:i + batch_size]
        yield images[idx].contiguous(memory_format=torch.channels_last), labels[idx]
