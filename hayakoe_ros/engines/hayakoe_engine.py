# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Style-Bert-VITS2 (JP-Extra) voices through the hayakoe engine.

CPU: ONNX Runtime (INT8 BERT + FP32 synthesizer), the Raspberry Pi path; needs no torch.
CUDA: PyTorch, optionally with ``torch.compile`` on the shared BERT. The load itself
(device checks, sources, session settings) is :mod:`.hayakoe_load`.
"""

from __future__ import annotations

import collections
import contextlib
import gc
from typing import Iterator, Optional, Sequence, Union

import numpy as np

from . import hayakoe_internals as hk
from . import hayakoe_load, hayakoe_phonemes, hayakoe_staged, memory, openjtalk_guard
from . import ort_session, windowed_decoder
from .base import (AudioWindow, CancelToken, Engine, EngineError, EngineLoadError,
                   NothingToSpeakError, SynthesisCanceledError, UnknownStyleError,
                   VoiceParams)
from .values import Spinning
# Loading lives in hayakoe_load; its default source is still found here.
from .hayakoe_load import DEFAULT_SOURCE  # noqa: F401

#: Default length of the first decoder window (s); see ``first_window_s``. Chosen from
#: ``bench/windowed.py`` (full-size model, 2 threads, first_segment_morae 8): node TTFA /
#: raw generate() of the first sentence 0.18 at 0.05 s, 0.13 at 0.1 s, 0.15 at 0.2 s,
#: 0.20 at 0.4 s (shorter: the cut's context costs more than the window saves).
FIRST_WINDOW_S = 0.1


class HayakoeEngine(Engine):
    """A hayakoe speaker, loaded and ready.

    Args:
        speaker: Speaker name under ``{onnx|pytorch}/speakers/`` of the source
            (hayakoe's default voice is ``jvnv-F1-jp``).
        device: ``"cpu"`` (ONNX Runtime) or ``"cuda"``/``"cuda:N"`` (PyTorch).
        speaker_source: URI of the speaker files (``hf://user/repo[@rev]``,
            ``file:///abs/path``, ``s3://bucket/prefix``); empty = hayakoe's repo.
        bert_source: URI of the shared BERT and tokenizer; empty = hayakoe's repo.
        cache_dir: Download cache; empty = ``$HAYAKOE_CACHE`` or ``./hayakoe_cache``.
        num_threads: ONNX Runtime intra-op threads for every session (CPU), or torch CPU
            threads (CUDA); 0 = the runtime default.
        compile: CUDA only: ``torch.compile`` the BERT. hayakoe's documentation says
            about 80 s more warm-up for about 20 % faster sentences; on an H200 here it
            was no faster (``generate()`` 135 against 128 ms) and loaded in 184 s against
            14 s (BENCHMARKS.md, "The CUDA path").
        cudnn: CUDA only: run the convolutions through cuDNN (process-wide). Off by
            default: cuDNN plans each new input length again, which made the first audio
            of new sentences come after 295 ms instead of 121 ms on an H200
            (:func:`.hayakoe_load.use_cudnn`).
        allocator: CPU only: glibc ``mallopt`` settings applied (process-wide) before
            loading; :data:`memory.NODE_ALLOCATOR` by default, ``AllocatorSettings()``
            keeps glibc's defaults. A no-op on other C libraries.
        trim: CPU only: return freed memory to the system (``malloc_trim``) after each
            ONNX session is built, after warm-up and on close.
        optimized_models: CPU only: load each ONNX model from a copy that ONNX Runtime
            optimised once, in a separate process, and that is kept under
            ``<cache_dir>/hayakoe_ros/ort-optimized`` (:mod:`.ort_cache`; about the
            size of the model files again on disk). Same graph and output, with much less
            memory while loading; falls back to the plain model when the copy cannot be
            made. Figures for these levers are in BENCHMARKS.md ("Memory levers").
        spinning: CPU only: which ONNX Runtime sessions let their idle intra-op threads
            busy-wait for the next operator while a run lasts (a :class:`.Spinning`
            value or its name: ``'none'``, ``'first_audio'``, ``'all'``); they stop when
            the run returns (:data:`.ort_session.SPINNING_STOP_KEY`), and threads that
            do not spin sleep and leave that time to the rest of the robot. Measured over
            ROS on this 2-core VM against ``'none'`` (four runs of 40 paired one-sentence
            replies after idle, features computed; ``bench/spinning_ros.py``,
            BENCHMARKS.md, "Spinning: back to the first audio"): ``'first_audio'`` (the
            default) first audio 6-20 ms sooner for 1.7-4.3 % more CPU per audio second,
            ``'all'`` (as ONNX Runtime's own default and raw hayakoe's sessions) 13-22 ms
            for 1.9-4.9 %: on average 4 ms sooner than ``'first_audio'`` for 0.7 % more.
        first_window_s: CPU only: decode each segment's latent in windows, the first
            this many seconds of audio long (:data:`FIRST_WINDOW_S`, 0.1 s, 9 frames of
            the 44.1 kHz JP-Extra models) and each later one twice the one before
            (:meth:`synthesize_windows`), with the synthesizer cut in two stages at the
            decoder (:mod:`.decoder_split`, cached beside the optimised models). 0 =
            whole segments (hayakoe's own single call). In ``(0, 10]`` otherwise; a
            graph that cannot be cut falls back to whole segments with one WARNING.

    Raises:
        EngineLoadError: the model cannot be loaded, ``first_window_s`` is out of
            range or ``spinning`` unknown; the message names the cause.
    """

    name = 'hayakoe'

    def __init__(self, speaker: str = 'jvnv-F1-jp', device: str = 'cpu', *,
                 speaker_source: str = '', bert_source: str = '', cache_dir: str = '',
                 num_threads: int = 0, compile: bool = False, cudnn: bool = False,
                 allocator: memory.AllocatorSettings = memory.NODE_ALLOCATOR,
                 trim: bool = True, optimized_models: bool = True,
                 spinning: Union[Spinning, str] = Spinning.FIRST_AUDIO,
                 first_window_s: float = FIRST_WINDOW_S) -> None:
        if first_window_s and not 0 < first_window_s <= windowed_decoder.MAX_FIRST_WINDOW_S:
            raise EngineLoadError(f'first_window_s {first_window_s!r} is out of range: 0 '
                                  '(whole segments) or (0, '
                                  f'{windowed_decoder.MAX_FIRST_WINDOW_S:g}] s')
        self._staged: Optional[windowed_decoder.StagedSynthesizer] = None
        self._device = device
        self._speaker_name = speaker
        self._num_threads = int(num_threads)
        self._trim = bool(trim) and device == 'cpu'
        tts, self._speaker, self._staged = hayakoe_load.load(
            speaker, device, speaker_source=speaker_source, bert_source=bert_source,
            cache_dir=cache_dir, num_threads=self._num_threads, compile=compile, cudnn=cudnn,
            allocator=allocator, trim=self._trim, optimized_models=optimized_models,
            spinning=hayakoe_load.spinning_mode(spinning), first_window_s=first_window_s,
            release=self._release)
        self._tts = tts
        self._tokenizer_dir = hk.tokenizer_dir(tts)
        self._feature_cache: collections.OrderedDict = collections.OrderedDict()
        self._punct = hayakoe_phonemes.punctuation_ids()
        self._hop = hk.hop_length(self._speaker)
        self._n_speakers = hk.speaker_count(self._speaker)
        self._sample_rate = int(self._speaker.sampling_rate)
        self._first_frames = 0 if self._staged is None else \
            windowed_decoder.first_window_frames(first_window_s, self._sample_rate,
                                                 self._staged.hop)
        self._styles = hk.style_names(self._speaker)
        self._model_id = hayakoe_load.model_identity(self._tts, self._speaker, self._device,
                                                     self._speaker_name)
        self._release()

    @property
    def windowed(self) -> bool:
        """True when :meth:`synthesize_windows` decodes in windows (the two stages loaded)."""
        return self._staged is not None

    @property
    def first_window_s(self) -> float:
        """Audio seconds of a segment's first decoder window (0: one window, whole)."""
        if self._staged is None or not self._first_frames:
            return 0.0
        return self._first_frames * self._staged.hop / self._sample_rate

    def set_first_window(self, seconds: float) -> None:
        """Change the first window's length (0 = whole segments), for the next segment.

        Rounded up to whole latent frames. No effect without the two stages.

        Raises:
            ValueError: ``seconds`` is not 0 and not in ``(0, MAX_FIRST_WINDOW_S]``.
        """
        if seconds == 0:
            self._first_frames = 0
        elif self._staged is not None:
            self._first_frames = windowed_decoder.first_window_frames(
                seconds, self._sample_rate, self._staged.hop)
        else:
            windowed_decoder.first_window_frames(seconds, self._sample_rate, 512)

    @property
    def staged(self) -> Optional[windowed_decoder.StagedSynthesizer]:
        """The two-stage synthesizer in use, or None (whole segments; for tests, benches)."""
        return self._staged

    def _release(self) -> None:
        """Give freed heap memory back to the system (when ``trim`` is on; a few ms)."""
        if self._trim:
            memory.release_free_memory()

    @property
    def sample_rate(self) -> int:
        """Model sample rate in Hz (44100 for hayakoe's JP-Extra voices)."""
        return self._sample_rate

    @property
    def styles(self) -> Sequence[str]:
        """Style names of the voice, in the model's ``style2id`` order."""
        return list(self._styles)

    @property
    def voice(self) -> str:
        """The hayakoe speaker's name."""
        return self._speaker_name

    @property
    def device(self) -> str:
        """Device string the engine was loaded on."""
        return self._device

    @property
    def model_id(self) -> str:
        """Device and the model files (name, size, mtime), hashed; computed at load."""
        return self._model_id

    @property
    def speaker(self):
        """The underlying :class:`hayakoe.Speaker` (for benchmarks and tests)."""
        return self._speaker

    @property
    def tts(self):
        """The underlying :class:`hayakoe.TTS`."""
        return self._tts

    def session_threads(self) -> dict:
        """ONNX Runtime intra-op thread setting of each session, by role (CPU only)."""
        return {role: sess.get_session_options().intra_op_num_threads
                for role, sess in hk.onnx_sessions(self._tts, self._speaker).items()}

    def session_spinning(self) -> dict:
        """Whether each session's idle intra-op threads busy-wait, by role (CPU only).

        The value of ONNX Runtime's ``session.intra_op.allow_spinning`` entry as the
        session was built with it: ``'0'``, ``'1'``, or ``''`` when never set (the
        runtime then spins).
        """
        return self.session_config(ort_session.SPINNING_KEY)

    def session_config(self, key: str) -> dict:
        """ONNX Runtime session config entry ``key`` of each session, by role (CPU only).

        ``''`` for a session built without it.
        """
        return {role: ort_session.session_config_entry(sess, key)
                for role, sess in hk.onnx_sessions(self._tts, self._speaker).items()}

    def check_voice(self, voice: VoiceParams) -> None:
        """Raise :class:`UnknownStyleError` for an unknown style or speaker id."""
        super().check_voice(voice)
        if not 0 <= voice.speaker_id < self._n_speakers:
            raise UnknownStyleError(
                f'unknown speaker id {voice.speaker_id}; this model has '
                f'{self._n_speakers} speaker(s)')

    def _features(self, text: str) -> hk.SegmentFeatures:
        """Front end + BERT of a segment, cached (the last four segments).

        Each segment's BERT runs once, whether the pause before it or its synthesis asks
        for it first.
        """
        hk.ensure_tokenizer(self._tokenizer_dir)
        unsafe = openjtalk_guard.unsafe(text)
        if unsafe is not None:  # hayakoe's g2p would hand it to Open JTalk whole
            raise EngineError(f'segment refused: Open JTalk cannot take {unsafe}')
        feats = self._feature_cache.pop(text, None)
        if feats is None:
            feats = hk.segment_features(self._speaker, text)
        self._feature_cache[text] = feats
        while len(self._feature_cache) > 4:
            self._feature_cache.popitem(last=False)
        return feats

    def forget_features(self) -> None:
        """Drop the cached front end and BERT features of recent segments.

        For measurements: the next synthesis of any text then costs what its first did.
        """
        self._feature_cache.clear()

    def _check_speakable(self, text: str, feats: hk.SegmentFeatures) -> None:
        from hayakoe.nlp.symbols import SYMBOLS

        silent = {'_', 'SP', 'UNK'}
        if not any(p != 0 and p not in self._punct and SYMBOLS[p] not in silent
                   for p in feats.phones):
            raise NothingToSpeakError(f'nothing speakable in {text!r}')

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """Synthesise one segment; see :meth:`Engine.synthesize`."""
        return self.synthesize_timed(text, voice).audio

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """Synthesise one segment whole, with its phones; see :meth:`Engine.synthesize_timed`.

        The phones are the model's own durations (frames x ``hop_length``), which it
        computes for the audio anyway: no extra cost (:mod:`.hayakoe_phonemes`). None
        from a ``synthesizer.onnx`` exported without its durations output.
        """
        self.check_voice(voice)
        feats = self._features(text)
        self._check_speakable(text, feats)
        audio, frames = hk.synthesize_features(self._speaker, feats, voice)
        return AudioWindow(audio, phones=hayakoe_phonemes.phones_from_frames(
            feats.phones, frames, self._hop, len(audio)))

    def synthesize_windows(self, text: str, voice: VoiceParams,
                           first_audio: bool = True) -> Iterator[AudioWindow]:
        """Synthesise one segment in decoder windows; see :meth:`Engine.synthesize_windows`.

        Front end and BERT, then the first stage (encoder, duration predictors, flow) once,
        then the decoder window by window (:func:`.windowed_decoder.window_plan`: the
        first ``first_window_s`` long, each later one twice the one before). Whole
        segments (one window) without the two stages, and with ``pitch_scale`` or
        ``intonation_scale`` other than 1 (WORLD re-synthesis needs the whole segment).
        The first window carries the segment's phones, from the first stage's durations:
        the same as :meth:`synthesize_timed`'s.
        """
        staged = self._staged
        if staged is None or not self._first_frames or voice.pitch_scale != 1.0 \
                or voice.intonation_scale != 1.0:
            yield from super().synthesize_windows(text, voice)
            return
        self.check_voice(voice)
        feats = self._features(text)
        self._check_speakable(text, feats)
        yield from hayakoe_staged.decode_windows(self._speaker, staged, feats, voice,
                                                 self._first_frames, self._sample_rate)

    def window_seconds(self, audio_s: float, voice: VoiceParams) -> tuple:
        """Seconds of each window of a segment of ``audio_s`` s (:meth:`Engine.window_seconds`).

        :func:`.windowed_decoder.window_plan` over ``ceil(audio_s x rate / hop)`` frames,
        as :meth:`synthesize_windows` plans the latent; ``(audio_s,)`` where that
        decodes whole (no two stages, a first window of 0, WORLD re-synthesis).
        """
        staged = self._staged
        if staged is None or not self._first_frames or audio_s <= 0 \
                or voice.pitch_scale != 1.0 or voice.intonation_scale != 1.0:
            return (float(audio_s),)
        frames = max(1, int(np.ceil(audio_s * self._sample_rate / staged.hop - 1e-9)))
        plan = windowed_decoder.window_plan(frames, staged.hop, self._first_frames)
        return tuple((hi - lo) / self._sample_rate for lo, hi in plan)

    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """Pause at the end of ``left``, predicted over the pair ``left + right``.

        Runs the duration predictor (no decoder, and no extra BERT: each segment's
        features are computed once and shared with its synthesis) on the two segments'
        phoneme sequence, finds the punctuation phoneme that ends ``left`` and converts
        its frames, plus the blanks on either side, to seconds: ``frames * hop_length /
        sample_rate`` (hayakoe's ``durations_to_boundary_pauses``). Looking ahead one
        segment only keeps the cost independent of the total text length. Returns 0.0
        when ``left`` has no punctuation, or when the model has no duration predictor.
        The pause heard is decided from it in ``hayakoe_ros.speech.pauses``.
        """
        lf, rf = self._features(left), self._features(right)
        left_runs = hayakoe_phonemes.punctuation_runs(lf.phones, self._punct)
        if not left_runs:
            return 0.0
        predicted = hk.pair_durations(self._speaker, lf, rf, voice)
        if predicted is None:
            return 0.0
        ids, frames = predicted
        pos = left_runs[-1]  # the pair keeps left's phonemes at their indices
        total = float(frames[pos])
        if pos > 0 and ids[pos - 1] == 0:
            total += float(frames[pos - 1])
        if pos + 1 < len(ids) and ids[pos + 1] == 0:
            total += float(frames[pos + 1])
        return total * self._hop / self.sample_rate

    @contextlib.contextmanager
    def cancellable(self, token: CancelToken) -> Iterator[None]:
        """Abort the ONNX Runtime run in flight when ``token`` is canceled.

        On the ONNX backend every session run inside the block gets ``RunOptions`` whose
        ``terminate`` flag the cancel sets (:func:`hayakoe_internals.terminable_runs`), so
        BERT, the duration predictor or the decoder stops within one operator. On CUDA
        (PyTorch) the nearest boundary is the end of the call (:meth:`Engine.cancellable`).

        Raises:
            SynthesisCanceledError: ``token`` was canceled before or during the block.
        """
        token.check()
        sessions = hk.terminable_sessions(self._tts, self._speaker)
        if not sessions:
            yield
            token.check()
            return
        with ort_session.terminable_runs(sessions) as terminate, token.hook(terminate):
            try:
                yield
            except Exception as exc:
                if token.canceled:
                    raise SynthesisCanceledError('synthesis canceled (ONNX Runtime run '
                                                 'terminated)') from exc
                raise
        token.check()

    def warmup(self) -> None:
        """Synthesise two sentences and predict one pause (the first ONNX calls are slow)."""
        voice = VoiceParams(style=self.styles[0])
        self.synthesize('こんにちは、テストです。', voice)
        self.synthesize('音声合成の準備をしています。', voice)
        self.predict_pause('こんにちは。', 'テストです。', voice)
        self._feature_cache.clear()
        self._release()

    def close(self) -> None:
        """Drop the sessions and hayakoe's global tokenizer, and return their memory."""
        self._speaker = None
        self._tts = None
        self._staged = None
        self._feature_cache.clear()
        hk.unload_globals()
        gc.collect()  # hayakoe's objects hold reference cycles; free the sessions now
        self._release()

