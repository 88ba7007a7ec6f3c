# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The random JP-Extra synthesizer: hyper-parameters, style vectors, calibrated weights."""

from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator

import numpy as np

from tools.random_model.bert import BertFeatures
from tools.random_model.recipes import (
    CALIBRATION_TEXTS,
    DATA_COMMON,
    PAUSE_SYMBOLS,
    STYLE_WIDTH,
)


def make_hyper_parameters(spec: dict[str, Any], speaker: str):
    """Return the speaker's HyperParameters (what config.json holds)."""
    from hayakoe.models.hyper_parameters import (
        HyperParameters,
        HyperParametersData,
        HyperParametersModel,
    )

    model = spec['model']
    if model['n_layers'] < 3:
        raise ValueError('the text encoder conditions on layer 2: n_layers must be >= 3')
    if model['inter_channels'] % 2:
        raise ValueError('inter_channels must be even (coupling halves)')
    if math.prod(model['upsample_rates']) != DATA_COMMON['hop_length']:
        raise ValueError('upsample_rates must multiply to hop_length')
    styles = list(spec['styles'])
    if not styles or styles[0] != 'Neutral':
        raise ValueError("the first style must be 'Neutral' (row 0 = mean)")
    data = HyperParametersData(
        **DATA_COMMON,
        training_files=f'Data/{speaker}/train.list',
        validation_files=f'Data/{speaker}/val.list',
        n_speakers=1,
        spk2id={speaker: 0},
        num_styles=len(styles),
        style2id={name: i for i, name in enumerate(styles)},
    )
    return HyperParameters(
        model_name=speaker,
        version='2.0-JP-Extra',
        data=data,
        model=HyperParametersModel(**model),
    )


def make_style_vectors(spec: dict[str, Any], seed: int) -> np.ndarray:
    """Return float32 [num_styles, 256]; row 0 is the mean (Neutral) style."""
    rng = np.random.default_rng(seed + 1)
    std = float(spec['style_std'])
    mean = rng.normal(0.0, std, STYLE_WIDTH)
    rows = [mean] + [mean + rng.normal(0.0, std, STYLE_WIDTH)
                     for _ in spec['styles'][1:]]
    return np.stack(rows).astype(np.float32)


def new_net_g(hps):
    """Instantiate SynthesizerTrn exactly as hayakoe's ``get_net_g`` does."""
    from hayakoe.models.models_jp_extra import SynthesizerTrn
    from hayakoe.nlp.symbols import SYMBOLS

    m = hps.model
    return SynthesizerTrn(
        n_vocab=len(SYMBOLS),
        spec_channels=hps.data.filter_length // 2 + 1,
        segment_size=hps.train.segment_size // hps.data.hop_length,
        n_speakers=hps.data.n_speakers,
        use_spk_conditioned_encoder=m.use_spk_conditioned_encoder,
        use_noise_scaled_mas=m.use_noise_scaled_mas,
        use_mel_posterior_encoder=m.use_mel_posterior_encoder,
        use_duration_discriminator=m.use_duration_discriminator,
        use_wavlm_discriminator=m.use_wavlm_discriminator,
        inter_channels=m.inter_channels,
        hidden_channels=m.hidden_channels,
        filter_channels=m.filter_channels,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        kernel_size=m.kernel_size,
        p_dropout=m.p_dropout,
        resblock=m.resblock,
        resblock_kernel_sizes=m.resblock_kernel_sizes,
        resblock_dilation_sizes=m.resblock_dilation_sizes,
        upsample_rates=m.upsample_rates,
        upsample_initial_channel=m.upsample_initial_channel,
        upsample_kernel_sizes=m.upsample_kernel_sizes,
        n_layers_q=m.n_layers_q,
        use_spectral_norm=m.use_spectral_norm,
        gin_channels=m.gin_channels,
        slm=m.slm,
    )


def calibration_inputs(hps, tokenizer, bert, style_vec: np.ndarray,
                        texts: tuple = CALIBRATION_TEXTS) -> list[dict[str, Any]]:
    """Run hayakoe's text front end + the torch BERT on ``texts`` (the calibration texts).

    Mirrors ``hayakoe.nlp.japanese.bert_feature.extract_bert_feature`` without
    touching hayakoe's global tokenizer/model singletons.
    """
    from hayakoe.models.text_preprocess import prepare_phone_sequences
    from hayakoe.nlp.japanese.g2p import text_to_sep_kata
    import torch

    wrapper = BertFeatures.wrap(bert)
    items = []
    for text in texts:
        # hayakoe's g2p splits words with the *global* tokenizer (word2ph).
        with borrowed_global_tokenizer(tokenizer):
            norm_text, phone, tone, language, word2ph = prepare_phone_sequences(text, hps)
        clean = ''.join(text_to_sep_kata(norm_text, raise_yomi_error=False)[0])
        enc = tokenizer(clean, return_tensors='pt')
        if enc['input_ids'].shape[1] != len(clean) + 2 or len(word2ph) != len(clean) + 2:
            raise RuntimeError(f'tokenizer is not one token per character for {clean!r}')
        with torch.no_grad():
            hidden = wrapper(enc['input_ids'], enc['attention_mask'])[0]
        feats = torch.repeat_interleave(hidden, torch.tensor(word2ph), dim=0).T
        items.append({
            'x': torch.LongTensor(phone).unsqueeze(0),
            'x_lengths': torch.LongTensor([len(phone)]),
            'sid': torch.LongTensor([0]),
            'tone': torch.LongTensor(tone).unsqueeze(0),
            'language': torch.LongTensor(language).unsqueeze(0),
            'bert': feats.unsqueeze(0).float(),
            'style_vec': torch.from_numpy(style_vec).unsqueeze(0),
        })
    return items


def make_synthesizer(hps, spec: dict[str, Any], seed: int, calib: list[dict[str, Any]],
                      duration_calib: list[dict[str, Any]] | None = None):
    """Create the random SynthesizerTrn and calibrate durations and level.

    Durations are calibrated on ``duration_calib`` (default: ``calib``), the output
    level on ``calib``.  The recipe's optional ``bert_proj_scale`` first scales the
    text encoder's BERT projection.
    """
    import torch

    torch.manual_seed(seed + 2)
    net_g = new_net_g(hps).eval()
    bert_scale = float(spec.get('bert_proj_scale', 1.0))
    if bert_scale != 1.0:
        with torch.no_grad():
            net_g.enc_p.bert_proj.weight.mul_(bert_scale)

    _calibrate_durations(net_g, spec, duration_calib or calib)

    # Output level: scale the decoder's last conv so the raw waveform of the
    # calibration sentences peaks at ``raw_peak`` (tanh stays unsaturated).
    captured: list[float] = []
    handle = net_g.dec.conv_post.register_forward_hook(
        lambda _m, _i, out: captured.append(float(out.abs().max())))
    try:
        with torch.no_grad():
            for c in calib:
                net_g.infer(**c, noise_scale=0.0, noise_scale_w=0.0, sdp_ratio=0.0)
    finally:
        handle.remove()
    pre_peak = max(captured)
    if not math.isfinite(pre_peak) or pre_peak <= 0:
        raise RuntimeError('random decoder produced silence or non-finite output')
    with torch.no_grad():
        net_g.dec.conv_post.weight.mul_(math.atanh(float(spec['raw_peak'])) / pre_peak)
    return net_g


def _calibrate_durations(net_g, spec: dict[str, Any], calib: list[dict[str, Any]]) -> None:
    """Make the random duration predictors speak at a realistic rate.

    An untrained predictor gives about one frame per phoneme, which puts
    every predicted sentence pause under hayakoe's 80 ms floor.  So: scale the
    deterministic predictor's output projection to the recipe's log-domain
    spread; set its bias so phonemes average ``frames_per_phoneme`` (after
    ceil); nudge the text encoder's embeddings of the pause symbols (. ! ? ,
    and the ellipsis) along the gradient of their predicted log-duration until
    they average ``punctuation_frames``, so pauses are longer than phonemes,
    as in speech, and vary with context; finally centre the stochastic
    predictor on the same rate.  Everything is deterministic.
    """
    from hayakoe.nlp.symbols import SYMBOLS
    import torch

    target = float(spec['frames_per_phoneme'])
    pause_target = float(spec['punctuation_frames'])
    proj = net_g.dp.proj
    pause_ids = torch.tensor([SYMBOLS.index(p) for p in PAUSE_SYMBOLS if p in SYMBOLS])
    masks = [torch.isin(c['x'][0], pause_ids) for c in calib]

    def logw_split():
        with torch.no_grad():
            logw = [_dp_logw(net_g, c) for c in calib]
        pause = torch.cat([w[m] for w, m in zip(logw, masks)]).numpy()
        other = torch.cat([w[~m] for w, m in zip(logw, masks)]).numpy()
        return pause, other

    def frames(logw):
        return float(np.ceil(np.exp(logw)).mean())

    def set_bias():  # bisection: mean frames of non-pause phonemes == target
        other = logw_split()[1] - float(proj.bias)
        lo, hi = -8.0, 8.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if frames(other + mid) < target else (lo, mid)
        with torch.no_grad():
            proj.bias.fill_((lo + hi) / 2)

    with torch.no_grad():
        proj.bias.zero_()
        logw = torch.cat([_dp_logw(net_g, c) for c in calib])
        proj.weight.mul_(float(spec['duration_spread']) / max(float(logw.std()), 1e-6))
    set_bias()

    emb = net_g.enc_p.emb.weight
    for _ in range(100):
        if frames(logw_split()[0]) >= pause_target:
            break
        emb.grad = None
        loss = torch.stack([_dp_logw(net_g, c, grad=True)[m].sum()
                            for c, m in zip(calib, masks)]).sum()
        loss.backward()
        with torch.no_grad():
            grad = emb.grad[pause_ids]
            step = grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)
            emb[pause_ids] += 0.1 * step * emb[pause_ids].norm(dim=1, keepdim=True)
    net_g.zero_grad(set_to_none=True)
    set_bias()

    with torch.no_grad():
        # The stochastic predictor's flows start as identity; its final
        # (reverse) affine step yields logw = -m, so centre it likewise.
        net_g.sdp.flows[0].m.fill_(-math.log(target))


def _dp_logw(net_g, c: dict[str, Any], grad: bool = False):
    """Return the deterministic duration predictor's logw for one input.

    ``DurationPredictor.forward`` detaches its input; with ``grad=True`` the
    same layers run without the detach so gradients reach the text encoder.
    """
    import torch

    g = net_g.emb_g(c['sid']).unsqueeze(-1)
    x, _, _, x_mask = net_g.enc_p(c['x'], c['x_lengths'], c['tone'], c['language'],
                                  c['bert'], c['style_vec'], g=g)
    dp = net_g.dp
    if not grad:
        return dp(x, x_mask, g=g).flatten()
    x = x + dp.cond(g)
    x = dp.norm_1(torch.relu(dp.conv_1(x * x_mask)))
    x = dp.norm_2(torch.relu(dp.conv_2(x * x_mask)))
    return (dp.proj(x * x_mask) * x_mask).flatten()


@contextlib.contextmanager
def borrowed_global_tokenizer(tokenizer) -> Iterator[None]:
    """Install ``tokenizer`` as hayakoe's global tokenizer, then restore the old one.

    hayakoe's g2p calls ``bert_models.load_tokenizer()`` without a path; with
    nothing loaded that would try to download the real tokenizer.
    """
    from hayakoe.nlp import bert_models

    previous = bert_models._loaded_tokenizer
    bert_models._loaded_tokenizer = tokenizer
    try:
        yield
    finally:
        bert_models._loaded_tokenizer = previous
