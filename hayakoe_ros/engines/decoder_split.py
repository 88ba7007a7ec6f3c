# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""hayakoe's ``synthesizer.onnx`` cut at the decoder's input and at its residual joins.

The decoder (87 % of the synthesizer's time on the full-size model) is a chain of
convolutions (:mod:`.decoder_receptive`), so its first samples need only the first
frames of the latent. To decode a segment in windows the graph is cut into:

* ``stage1.onnx``: the synthesizer's inputs to ``(z, g, durations)``: the text encoder,
  duration predictors, alignment and flow, up to the decoder's input ``z * y_mask``
  ``[1, inter_channels, frames]``, and the speaker embedding ``g`` ``[1, gin, 1]``;
* ``dec0.onnx`` ... : the decoder's pieces of :meth:`.decoder_receptive.ChainSpec.pieces`,
  in that order: ``conv_pre + cond(g)``, then per upsampling stage its transposed
  convolution, each residual pair of each residual block, the blocks' mean, and
  ``conv_post`` last.

Cut this finely, a window re-reads at each piece only that piece's own context beyond
what the window before it computed (:class:`.windowed_decoder.DecoderStream`): cut only
between stages, the first stage's residual blocks alone re-read 7.5 latent frames on
each side at every cut, about 7 frames' worth of the whole decoder's work.

The cut is found by the node names of a ``torch.onnx`` export of ``net_g.infer`` (the
``dec`` module's scope: ``/dec/conv_pre/Conv``, ``/dec/ups.<i>/ConvTranspose``,
``/dec/resblocks.<m>/Add``...), and the convolutions of each piece are checked against
the model config: a graph that has no decoder input where expected, or other layers,
raises :class:`SplitError` (the engine then decodes whole segments, and says so once).
The cut runs in a separate process (the ``onnx`` package holds the whole model in memory
while cutting) and its output is kept next to the optimised models, keyed like them
(:mod:`.ort_cache`): the source's SHA-256, :data:`SPLIT_FORMAT` and the ``onnx``
version. Needs ``onnx`` to cut, not to run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

from . import ort_cache
from .decoder_receptive import ChainSpec, signatures

_LOG = logging.getLogger(__name__)

#: Version of the cut's output layout; part of the cache key.
SPLIT_FORMAT = 3
STAGE1 = 'stage1.onnx'
_META = 'meta.json'


class SplitError(RuntimeError):
    """The graph cannot be cut where this module expects (the message says why)."""


def _scope(name: str) -> list:
    return [p for p in name.split('/') if p]


def _in_decoder(node) -> bool:
    return 'dec' in _scope(node.name)[:-1]


def _attrs(node) -> dict:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _conv_signature(node) -> tuple:
    a = _attrs(node)
    pads = list(a.get('pads', [0, 0]))
    if len(pads) != 2 or pads[0] != pads[1] or a.get('group', 1) != 1:
        return (node.op_type, 'pads', tuple(pads), 'group', a.get('group', 1))
    return (node.op_type, int(a.get('kernel_shape', [0])[0]), int(a.get('strides', [1])[0]),
            int(a.get('dilations', [1])[0]), int(pads[0]))


def _single(dec: list, scope: list, op: str, what: str):
    found = [n for n in dec if _scope(n.name)[-2:] == scope]
    if len(found) != 1 or found[0].op_type != op:
        raise SplitError(f"no single 'dec/{'/'.join(scope)}' node: {what}")
    return found[0]


def find_cuts(model, chain: ChainSpec) -> dict:
    """Where to cut ``model`` (an ``onnx.ModelProto`` of ``synthesizer.onnx``).

    Returns:
        ``{'z': name, 'g': name or '', 'tensors': {key: name}, 'audio': name,
        'durations': name}``: ``tensors`` names the graph's tensor for every signal key
        of :meth:`ChainSpec.pieces` (``z``, ``x<i>``, ``u<i>``, ``r<i>.<j>.<p>``,
        ``audio``).

    Raises:
        SplitError: no decoder where expected, or its layers differ from what
            ``chain`` (the model config) says.
    """
    graph = model.graph
    nodes = list(graph.node)
    producer = {o: n for n in nodes for o in n.output}
    dec = [n for n in nodes if _in_decoder(n)]
    pre = [n for n in dec if _scope(n.name)[-2:] == ['conv_pre', 'Conv']]
    if len(pre) != 1:
        raise SplitError('no decoder input where expected: the graph has no single '
                         "'dec/conv_pre/Conv' node (not a torch.onnx export of hayakoe's "
                         'net_g.infer?)')
    z = pre[0].input[0]
    outputs = [o.name for o in graph.output]
    if len(outputs) < 2 or producer.get(outputs[0]) not in dec:
        raise SplitError(f'the decoder does not produce the first graph output {outputs}')
    inner = {o for n in dec for o in n.output}
    inits = {i.name for i in graph.initializer}
    external = sorted({i for n in dec for i in n.input if i and i not in inner
                       and i not in inits and (i not in producer
                                               or producer[i].op_type != 'Constant')})
    g = [i for i in external if i != z]
    if z not in external or len(g) > 1:
        raise SplitError(f'the decoder reads {external}, expected its input {z!r} and at '
                         'most the speaker embedding')
    tensors = {'z': z, 'audio': outputs[0]}
    blocks = [stage.layers[1].branches for stage in chain.stages[1:]]
    for i, branches in enumerate(blocks, start=1):
        up = _single(dec, [f'ups.{i - 1}', 'ConvTranspose'], 'ConvTranspose',
                     'the decoder has other stages than its config says')
        relu = producer.get(up.input[0])
        if relu is None or relu.op_type != 'LeakyRelu':
            raise SplitError(f"no leaky ReLU before 'dec/ups.{i - 1}/ConvTranspose'")
        tensors[f'x{i - 1}'] = relu.input[0]
        tensors[f'u{i}'] = up.output[0]
        for j, pairs in enumerate(branches):
            m = (i - 1) * len(branches) + j
            adds = [n for n in dec if n.op_type == 'Add'
                    and _scope(n.name)[-2:-1] == [f'resblocks.{m}']]
            previous = tensors[f'u{i}']
            if len(adds) != len(pairs):
                raise SplitError(f"'dec/resblocks.{m}' has {len(adds)} residual adds, the "
                                 f'config gives {len(pairs)}')
            for p, node in enumerate(adds):
                if previous not in node.input:
                    raise SplitError(f"'{node.name}' does not add to its block's signal")
                previous = tensors[f'r{i}.{j}.{p}'] = node.output[0]
    post = _single(dec, ['conv_post', 'Conv'], 'Conv', 'the decoder ends otherwise')
    relu = producer.get(post.input[0])
    if relu is None or relu.op_type != 'LeakyRelu':
        raise SplitError("no leaky ReLU before 'dec/conv_post/Conv'")
    tensors[f'x{len(blocks)}'] = relu.input[0]
    return {'z': z, 'g': g[0] if g else '', 'tensors': tensors, 'audio': outputs[0],
            'durations': outputs[1]}


def _check_piece(piece, spec) -> None:
    found = sorted(_conv_signature(n) for n in piece.graph.node
                   if n.op_type in ('Conv', 'ConvTranspose'))
    want = sorted(signatures(spec.layers) + list(spec.extra))
    if found != want:
        raise SplitError(f'decoder piece {spec.name} has convolutions {found[:6]}... but '
                         f'the model config gives {want[:6]}... ({len(found)} vs '
                         f'{len(want)})')


def split(source: str, target: str, model_config: dict) -> None:
    """Cut ``source`` into ``target``/``stage1.onnx``, ``dec0.onnx`` ... (see the module).

    ``dec<n>.onnx`` is the ``n``-th of :meth:`ChainSpec.pieces`; its graph inputs are in
    the order of that piece's ``inputs`` (``pre``: then ``g``).

    Raises:
        SplitError: the graph cannot be cut (see :func:`find_cuts`), or a piece's
            convolutions differ from the config's.
        ValueError: ``model_config`` lacks the decoder fields.
    """
    import onnx
    from onnx.utils import Extractor

    chain = ChainSpec.from_config(model_config)
    model = onnx.load(source)
    cuts = find_cuts(model, chain)
    tensors = cuts['tensors']
    names = [i.name for i in model.graph.input]
    known = {v.name for v in model.graph.value_info}
    for name in list(tensors.values()) + ([cuts['g']] if cuts['g'] else []):
        if name not in known:  # shape inference stops short of them in these graphs
            model.graph.value_info.append(onnx.helper.make_tensor_value_info(
                name, onnx.TensorProto.FLOAT, None))
    extractor = Extractor(model)
    out = Path(target)
    g = [cuts['g']] if cuts['g'] else []
    onnx.save(extractor.extract_model(names, [cuts['z']] + g + [cuts['durations']]),
              str(out / STAGE1))
    pieces = chain.pieces()
    for n, spec in enumerate(pieces):
        inputs = [tensors[k] for k in spec.inputs] + (g if spec.name == 'pre' else [])
        piece = extractor.extract_model(inputs, [tensors[spec.output]])
        _check_piece(piece, spec)
        onnx.save(piece, str(out / f'dec{n}.onnx'))
    (out / _META).write_text(json.dumps({'source': os.path.abspath(source), 'cuts': cuts,
                                         'pieces': len(pieces)}), encoding='utf-8')


def _onnx_version() -> str:
    """The installed ``onnx`` package's version, read from its metadata.

    Not from ``onnx.__version__`` (the same string): importing ``onnx`` costs about 0.7 s
    of every start (``ml_dtypes``), and a start that finds its cut cached never uses it.

    Raises:
        importlib.metadata.PackageNotFoundError: ``onnx`` is not installed.
    """
    return importlib.metadata.version('onnx')


class SplitModelCache:
    """Cut copies of synthesizer graphs, made once in a separate process, under ``root``.

    Args:
        root: Cache directory (``<hayakoe cache>/hayakoe_ros/ort-split``, beside the
            optimised models of :class:`.ort_cache.OptimizedModelCache`).
        timeout_s: Seconds the cutting process may run.

    Entries are ``root/<stem>-<key>/`` holding the pieces and a ``meta.json``; a failed
    cut leaves ``<entry>.failed`` with the reason, so it is not retried at every start
    (delete it to retry), and an entry of an older key for the same source is removed.
    """

    def __init__(self, root: os.PathLike | str, timeout_s: float = 600.0) -> None:
        self.root = Path(root)
        self.timeout_s = float(timeout_s)

    def entry_dir(self, source: str) -> Path:
        """Entry directory of ``source`` (may not exist). Raises ``OSError`` if unreadable."""
        from .ort_cache import OptimizedModelCache

        sha = OptimizedModelCache(self.root).source_sha256(source)
        parts = (sha, str(SPLIT_FORMAT), _onnx_version())
        key = hashlib.sha256('|'.join(parts).encode('utf-8')).hexdigest()[:16]
        return self.root / f'{Path(source).stem}-{key}'

    def pieces(self, source: str, model_config: dict) -> Path:
        """Directory with ``source``'s pieces, cutting it now if needed.

        Raises:
            SplitError: the cut failed now or before (the reason, and the marker's path).
        """
        try:
            _onnx_version()  # needed to cut, and part of the key
        except importlib.metadata.PackageNotFoundError as exc:
            raise SplitError('the onnx package is not installed (needed once, to cut the '
                             'synthesizer graph)') from exc
        try:
            entry = self.entry_dir(source)
        except OSError as exc:
            raise SplitError(f'cannot read {source}: {exc}') from exc
        if (entry / _META).is_file():
            return entry
        failed = entry.with_name(entry.name + '.failed')
        if failed.exists():
            reason = failed.read_text(encoding='utf-8', errors='replace').strip()
            raise SplitError(f'{reason} (cut before: delete {failed} to retry)')
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix='.tmp-', dir=self.root))
        except OSError as exc:
            raise SplitError(f'cache directory {self.root} is not writable: {exc}') from exc
        try:
            error = self._cut(source, tmp, model_config)
            if error:
                try:
                    failed.write_text(error + '\n', encoding='utf-8')
                except OSError:
                    pass
                raise SplitError(error)
            try:
                os.replace(tmp, entry)
            except OSError:
                if not (entry / _META).is_file():
                    raise
            self._drop_stale(source, keep=entry)
            _LOG.info('cut %s into its decoder pieces in %s', source, entry)
            return entry
        except OSError as exc:
            raise SplitError(f'cannot store the cut of {source}: {exc}') from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _cut(self, source: str, target: Path, model_config: dict) -> str:
        cmd = [sys.executable, '-m', __name__, source, str(target), json.dumps(model_config)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return f'no cut within {self.timeout_s:.0f} s'
        except OSError as exc:
            # No second process here (an emulator running this interpreter, say): cut in
            # this one, at the price of its memory peak, once.
            _LOG.info('cannot start %s (%s): cutting %s in this process', sys.executable,
                      exc, source)
            try:
                split(source, str(target), model_config)
            except (SplitError, ValueError) as err:
                return f'{type(err).__name__}: {err}'
            return ''
        if proc.returncode != 0 or not (target / _META).is_file():
            lines = proc.stderr.strip().splitlines()
            return lines[-1][-500:] if lines else f'cutting exited with {proc.returncode}'
        return ''

    def _drop_stale(self, source: str, keep: Path) -> None:
        ort_cache.drop_stale_entries(self.root, source, keep, _META)


def stage_files(entry: Path) -> Optional[list]:
    """``[stage1.onnx, dec0.onnx, ...]`` of an entry, or None when it is incomplete."""
    try:
        meta = json.loads((entry / _META).read_text(encoding='utf-8'))
        count = int(meta['pieces'])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    files = [entry / STAGE1] + [entry / f'dec{i}.onnx' for i in range(count)]
    return files if all(f.is_file() for f in files) else None


if __name__ == '__main__':
    try:
        split(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
    except (SplitError, ValueError) as exc:
        sys.exit(f'{type(exc).__name__}: {exc}')
