"""How the engine's logits are judged against PyTorch's (no torch needed here, only numpy).

Two criteria, both over the whole [N, classes] output:

1. Error bound: max |engine - torch| / max |torch| <= 1e-4. The error is scaled by the largest
   torch logit, not taken per element, because float32 rounding in a deep network grows with the
   size of the activations, and random-weight logits can be large (resnet152's reach ~250).

2. Top-5 agreement, per image: the engine's five highest classes must be torch's five, up to
   ties. With random weights two logits can be almost equal, and then rounding may legitimately
   put either first. Since every engine logit may differ from torch's by up to
   tol = 1e-4 * max |torch|, a class c and a class d can trade places only if their torch
   logits are within 2 * tol of each other. So a top-5 set difference is excused exactly when
   every class the engine brought in is within 2 * tol (in torch's logits) of every class it
   left out; any other difference is a failure. The order inside the top 5 is reported
   ("exact" when it is identical too) but not required, for the same reason.

   Note what follows from the arithmetic: if the engine's logits do meet the error bound, an
   in-brought class c (e_c >= e_d) and a left-out class d satisfy
   t_d - t_c <= (t_d - e_d) + (e_c - t_c) <= 2 * tol, so the top-5 check can only fail
   together with the error bound. It is still checked and reported on its own, because it is
   the property a classifier's user sees, and it says whether an error-bound failure changes
   the predicted classes.

A non-finite engine output (NaN, inf) or a shape mismatch is always a failure.

The comparison is only as good as the reference, which must be
- input-sensitive: if two different images gave logits that differ by less than the tolerance,
  an engine that ignored the input would pass. input_sensitivity measures this on torch's
  logits for a batch of two images; parity.py requires at least MIN_INPUT_SENSITIVITY;
- well-conditioned: if torch's own float32 logits were further than the tolerance from the
  exact (float64) result, a correct float32 engine, which rounds differently, could not meet
  the bound. parity.py requires torch's float32 error to be at most MAX_REFERENCE_ERROR.
"""

from dataclasses import asdict, dataclass

import numpy as np

RELATIVE_TOLERANCE = 1e-4
TOP_K = 5
MIN_INPUT_SENSITIVITY = 100 * RELATIVE_TOLERANCE
MAX_REFERENCE_ERROR = RELATIVE_TOLERANCE / 4  # leaves the engine 3/4 of the tolerance


@dataclass
class Comparison:
    max_abs_error: float
    max_abs_torch: float
    relative_error: float
    top5: str            # "exact", "ties", or "DIFFERENT"
    top5_note: str       # the excused or failing swaps, per image
    passed: bool
    problem: str = ""    # why it failed, in words ("" when it passed)

    def as_dict(self):
        return asdict(self)


def relative_difference(got, expected):
    """max |got - expected| / max |expected|; inf for a shape mismatch or non-finite values."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape or not np.all(np.isfinite(got)):
        return float("inf")
    scale = float(np.max(np.abs(expected)))
    error = float(np.max(np.abs(got - expected)))
    return error / scale if scale > 0 else (0.0 if error == 0 else float("inf"))


def top_k(row, k=TOP_K):
    """Indices of the k largest values, largest first (exact ties: lower index first)."""
    return [int(i) for i in np.argsort(-row, kind="stable")[:k]]


def top_k_agreement(engine_row, torch_row, tol, k=TOP_K):
    """('exact' | 'ties' | 'DIFFERENT', note) for one image's logits; see the module doc."""
    engine_top, torch_top = top_k(engine_row, k), top_k(torch_row, k)
    if engine_top == torch_top:
        return "exact", ""
    brought_in = [c for c in engine_top if c not in torch_top]
    left_out = [d for d in torch_top if d not in engine_top]
    # Each pair (c in, d out) must be a possible tie: torch's logits within 2 * tol.
    worst_gap = max((float(torch_row[d] - torch_row[c]) for c in brought_in for d in left_out),
                    default=0.0)
    if not brought_in:
        note = f"same classes, order {engine_top} vs torch {torch_top}"
    else:
        note = (f"engine has {brought_in} instead of {left_out}; largest torch gap "
                f"{worst_gap:.3g} vs allowed 2*tol={2 * tol:.3g}")
    return ("ties" if worst_gap <= 2 * tol else "DIFFERENT"), note


def compare_logits(engine, reference, rel_tol=RELATIVE_TOLERANCE, k=TOP_K):
    """Compare an engine output with torch's; both numpy arrays, [N, classes] for top-k."""
    engine = np.asarray(engine, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if engine.shape != reference.shape:
        return Comparison(float("nan"), float("nan"), float("nan"), "DIFFERENT", "", False,
                          f"shape {list(engine.shape)}, torch {list(reference.shape)}")
    max_abs_torch = float(np.max(np.abs(reference)))
    if not np.all(np.isfinite(engine)):
        bad = int(np.size(engine) - np.count_nonzero(np.isfinite(engine)))
        return Comparison(float("nan"), max_abs_torch, float("nan"), "DIFFERENT", "", False,
                          f"{bad} non-finite values in the engine's output")
    max_abs_error = float(np.max(np.abs(engine - reference)))
    relative = relative_difference(engine, reference)
    tol = rel_tol * max_abs_torch

    verdicts, notes = [], []
    rows = zip(engine.reshape(len(engine), -1), reference.reshape(len(reference), -1))
    for image, (engine_row, torch_row) in enumerate(rows):
        verdict, note = top_k_agreement(engine_row, torch_row, tol, k)
        verdicts.append(verdict)
        if note:
            notes.append(f"image {image}: {note}")
    top5 = ("DIFFERENT" if "DIFFERENT" in verdicts else "ties" if "ties" in verdicts
            else "exact")

    problems = []
    if not relative <= rel_tol:
        problems.append(f"relative error {relative:.3g} > {rel_tol:g}")
    if top5 == "DIFFERENT":
        problems.append("top-5 differs beyond ties")
    return Comparison(max_abs_error, max_abs_torch, relative, top5, "; ".join(notes),
                      not problems, "; ".join(problems))


def input_sensitivity(reference):
    """max |logits of image 0 - logits of image 1| / max |logits|, for a batch of >= 2 images."""
    reference = np.asarray(reference, dtype=np.float64)
    scale = float(np.max(np.abs(reference)))
    return float(np.max(np.abs(reference[0] - reference[1]))) / scale if scale > 0 else 0.0
