"""Every depth landmark of one capture on one gamma axis, beside the Omega transition: chapter 9, the verdict's
landmark row and ``latentbook report``.

``depth_landmarks(cap, lens=...)`` reads from the capture alone (no forward pass): the intrinsic-dimension
profile of its token sample (TwoNN, and Gride at ``ID_SCALE``, past the few tokens a prompt contributes), the
massive-activation onset (every token's largest coordinates), the relative update norms, and the Omega
transition of the standardised profile ``m_z`` (the verdict's), and the largest one-layer step of raw ``m``
(``landmarks.raw_step``: the massive-step row asks whether it is the massive onset). The logit lens needs the model's final norm and
unembedding: ``lens_of(cap, loaded)`` computes it on ``LENS_TOKENS`` of the sampled tokens, and
``book_lens(run)`` caches it beside the run's capture. The first position (the attention sink) is left out
everywhere, and depth 0 (the embedding, where repeated words are one point) is not read for the ID peak.
Introduced in: chapter 9 (other clocks of depth).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..analysis import intrinsic_dimension, landmarks, omega_profiles, transition
from ..analysis.paper import PAPER_GAMMA_C
from ..analysis.verdict import GAMMA_C_TOLERANCE, K_MASSIVE, MIN_TRANSITION, coincides, places_gamma_c
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..capturing.results import Capture
    from ..models.zoo import LoadedModel
    from .runs import Run

ID_SCALE = 8  # Gride's n1: twice the tokens a prompt contributes to the 512-token sample (about four)
LENS_TOKENS = 64  # sampled tokens the logit lens reads (its unembedding costs 3.5 to 18 layers per token)
N_BOOT = 400
LANDMARK_NAMES = (
    "ID peak (TwoNN)",
    "ID peak (Gride)",
    "massive onset",
    "lens convergence",
    "Omega jump (m_z)",
)


@dataclass(frozen=True)
class Lens:
    """``KL(p_L || p_l)`` of sampled tokens at every depth held (``(n_depths, n_tokens)``) and their prompts."""

    kl: np.ndarray
    prompt_ids: np.ndarray


@dataclass(frozen=True)
class DepthLandmarks:
    """The landmarks of one capture (module docstring); ``lens`` and ``lens_convergence`` are None without a
    logit lens (an encoder, or not computed), ``omega_jump`` None with too few depths for the fit."""

    label: str
    n_layers: int
    id_two_nn: intrinsic_dimension.IDProfile
    id_gride: intrinsic_dimension.IDProfile
    onset: landmarks.Onset
    updates: landmarks.DepthProfile
    lens: landmarks.DepthProfile | None
    lens_convergence: landmarks.Convergence | None
    omega_jump: transition.Transition | None
    lens_note: str = ""  # why ``lens`` is None
    raw_step: landmarks.RawStep | None = None  # the largest one-layer step of raw m (None: not measured)

    def found(self) -> list[tuple[str, float, tuple[float, float]]]:
        """``(name, gamma, interval)`` of every landmark found, the Omega jump left out."""
        return [
            (name, gamma, ci)
            for name, (gamma, ci, found, _) in zip(LANDMARK_NAMES[:-1], self._readings()[:-1])
            if found
        ]

    def verdict(self) -> tuple[str, str]:
        """``analysis.verdict.judge_landmark`` of the Omega jump against the landmarks found."""
        from ..analysis.verdict import judge_landmark

        return judge_landmark(self.omega_jump, self.found(), self.n_layers + 1)

    def massive_step_verdict(self) -> tuple[str, str]:
        """``analysis.verdict.judge_massive_step``: is raw m's largest step the massive-activation onset?"""
        from ..analysis.verdict import judge_massive_step

        if self.raw_step is None:
            return "not testable here", "raw m's step was not measured for this run"
        return judge_massive_step(self.raw_step, self.onset.gamma, self.onset.found)

    def table(self) -> list[dict]:
        """One row per landmark: where it lies (``gamma`` with its interval, NaN when absent), whether it is found,
        whether it lies within ``PAPER_GAMMA_C +- GAMMA_C_TOLERANCE`` and whether it coincides with the Omega
        jump (``analysis.verdict.coincides``; only when a jump was found), and what it is."""
        rows = []
        jump = self.omega_jump if places_gamma_c(self.omega_jump) else None
        for name, (gamma, ci, found, what) in zip(LANDMARK_NAMES, self._readings()):
            near_paper = found and landmarks.near(ci, PAPER_GAMMA_C, GAMMA_C_TOLERANCE)
            with_jump = bool(
                found and jump is not None and name != LANDMARK_NAMES[-1] and coincides(gamma, ci, jump)
            )
            rows.append(
                {
                    "run": self.label,
                    "landmark": name,
                    "gamma": gamma if found else float("nan"),
                    "CI low": ci[0] if found else float("nan"),
                    "CI high": ci[1] if found else float("nan"),
                    "found": found,
                    "near 0.42": near_paper,
                    "with the Omega jump": with_jump,
                    "what": what,
                }
            )
        return rows

    def _readings(self) -> list[tuple[float, tuple[float, float], bool, str]]:
        def peak(profile: intrinsic_dimension.IDProfile) -> tuple[float, tuple[float, float], bool, str]:
            top = int(np.argmax(profile.dimension))
            value = float(profile.dimension[top])
            if top in (0, len(profile.gamma) - 1):
                return (
                    profile.peak_gamma,
                    profile.peak_ci,
                    False,
                    f"no interior peak (largest ID {value:.1f} at an end)",
                )
            if profile.ci[top, 0] <= max(profile.ci[0, 1], profile.ci[-1, 1]):
                return (
                    profile.peak_gamma,
                    profile.peak_ci,
                    False,
                    f"no peak above both ends (largest ID {value:.1f})",
                )
            return profile.peak_gamma, profile.peak_ci, True, f"ID {value:.1f}"

        onset = self.onset
        onset_what = f"largest coordinate x{onset.rise:.0f} in one layer, {onset.ratio:.0f}x the median's"
        readings = [
            peak(self.id_two_nn),
            peak(self.id_gride),
            (onset.gamma, (onset.gamma, onset.gamma), onset.found, onset_what if onset.found else "none"),
        ]
        if self.lens_convergence is None:
            readings.append((float("nan"), (float("nan"),) * 2, False, self.lens_note))
        else:
            c = self.lens_convergence
            readings.append(
                (
                    c.gamma,
                    c.ci,
                    True,
                    f"KL below {c.fraction:.0%} of its largest value past depth 1, from here on",
                )
            )
        jump = self.omega_jump
        if jump is None:
            readings.append((float("nan"), (float("nan"),) * 2, False, "too few depths for the fit"))
        else:
            placed = places_gamma_c(jump)
            if placed:
                what = f"jump {jump.amplitude:+.3f}"
            elif jump.has_transition:
                low, high = jump.amplitude_ci
                what = f"no transition: a step [{low:.3f}, {high:.3f}], not above {MIN_TRANSITION:.3f}"
            else:
                what = f"no transition: {jump.reason}"
            readings.append((jump.gamma_c, jump.ci, placed, what))
        return readings


def sample(cap: Capture) -> tuple[np.ndarray, np.ndarray]:
    """The capture's sampled token vectors at every depth held without the first position, ``(n_depths, n, d)``
    float64, and each token's prompt."""
    keep = cap.vectors.positions > 0
    if keep.sum() < 2 * ID_SCALE + 2:
        raise InvalidInputError(
            f"{cap.model_name}: {int(keep.sum())} sampled tokens after the first position; the landmarks need "
            f"{2 * ID_SCALE + 2}. Capture more prompts (or a larger n_vectors)."
        )
    return cap.vectors.values.numpy()[:, keep].astype(np.float64), cap.vectors.prompt_ids[keep]


def lens_of(cap: Capture, loaded: LoadedModel, n_tokens: int = LENS_TOKENS) -> Lens | None:
    """The logit lens of the first ``n_tokens`` sampled tokens (key order: a uniform subsample) of ``cap``, read
    with ``loaded`` (the captured model); None for a model without a language-model head."""
    from ..capturing.lens import lens_kl

    if loaded.kind != "causal" or loaded.model.get_output_embeddings() is None:
        return None
    if cap.depths[-1] != cap.n_layers:
        raise InvalidInputError("The logit lens compares every depth with the last: capture depth L as well.")
    vectors, prompts = sample(cap)
    return Lens(lens_kl(loaded, vectors[:, :n_tokens].astype(np.float32)), prompts[:n_tokens])


NO_HEAD = "no logit lens: an encoder has no language-model head"
NOT_COMPUTED = "not computed: the lens needs the model (lens_of(cap, load_model(name)))"


def depth_landmarks(
    cap: Capture,
    label: str | None = None,
    lens: Lens | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    lens_note: str | None = None,
) -> DepthLandmarks:
    """Every landmark of ``cap`` (module docstring); ``lens`` from ``lens_of`` (or ``book_lens``), and without
    it ``lens_note``, why (default: not computed)."""
    from ..analysis.confounds import massive_ratio

    vectors, prompts = sample(cap)
    gamma = cap.gamma
    inner = slice(1, None) if cap.depths[0] == 0 else slice(None)
    id_args = dict(gamma=gamma[inner], n_boot=n_boot, seed=seed)
    two_nn = intrinsic_dimension.id_profile(vectors[inner], prompts, n1=1, **id_args)
    gride = intrinsic_dimension.id_profile(vectors[inner], prompts, n1=ID_SCALE, **id_args)
    largest = np.array([cap.abs_max(layer).max() for layer in cap.depths.tolist()], dtype=np.float64)
    onset = landmarks.massive_onset(gamma, largest, massive_ratio(cap))
    updates = landmarks.update_norms(vectors, prompts, gamma, n_boot=n_boot, seed=seed)
    lens_profile = convergence = None
    if lens is not None:
        lens_profile = landmarks.token_mean_profile(
            lens.kl.T, lens.prompt_ids, gamma, n_boot=n_boot, seed=seed
        )
        if len(gamma) > landmarks.EDGE + 1:
            convergence = landmarks.convergence(lens_profile)
        else:  # a 1-layer model: nothing lies past the edge depths
            lens_note = (
                lens_note or f"{len(gamma)} depths: convergence is read past the first {landmarks.EDGE}"
            )
    jump = None
    if transition.is_testable(cap.n_depths):
        m_z = omega_profiles.standardised_profile(
            cap, n_boot=200, seed=seed, drop_first=True, drop_top_dims=K_MASSIVE
        )
        jump = transition.critical_depth(m_z.gamma, m_z.m, draws=m_z.draws, n_boot=200, seed=seed)
    raw = omega_profiles.profile(cap, n_boot=max(n_boot, 100), seed=seed)
    step = landmarks.raw_step(raw.gamma, raw.m, raw.draws)
    return DepthLandmarks(
        label or cap.model_name,
        cap.n_layers,
        two_nn,
        gride,
        onset,
        updates,
        lens_profile,
        convergence,
        jump,
        lens_note or ("" if lens is not None else NOT_COMPUTED),
        step,
    )


def book_landmarks(run: Run, n_boot: int = N_BOOT, seed: int = 0) -> DepthLandmarks:
    """``depth_landmarks`` of the run's book capture with its cached logit lens (``book_lens``)."""
    lens = book_lens(run)
    note = NO_HEAD if lens is None else None
    return depth_landmarks(run.capture(), run.label, lens=lens, n_boot=n_boot, seed=seed, lens_note=note)


def book_lens(run: Run, cached_only: bool = False) -> Lens | None:
    """``lens_of`` the run's book capture, cached beside it (an ``.npz`` of two arrays, written atomically);
    None for an encoder, or with ``cached_only`` when it is not cached yet."""
    from .._files import atomic_write, computing
    from ..capturing.cache import book_capture_path
    from ..models.zoo import load_model

    capture_path = book_capture_path(run.capture_name, shuffle=run.kind == "shuffled words")
    path = capture_path.with_name(f"{capture_path.stem}-lens{LENS_TOKENS}.npz")
    if path.is_file():
        with np.load(path, allow_pickle=False) as data:
            return Lens(data["kl"], data["prompt_ids"]) if data["kl"].size else None
    if cached_only:
        return None
    with computing(path):  # a second process asking for it waits, then reads the file
        if path.is_file():
            return book_lens(run, cached_only=True)
        lens = lens_of(run.capture(), load_model(run.capture_name))
        atomic_write(path, lambda tmp: _write_lens(tmp, lens))
    return lens


def _write_lens(tmp, lens: Lens | None) -> None:
    with open(tmp, "wb") as handle:
        empty = np.zeros((0, 0))
        np.savez(
            handle,
            kl=empty if lens is None else lens.kl,
            prompt_ids=empty if lens is None else lens.prompt_ids,
        )
