#!/usr/bin/python3
"""Real architectures for the benchmark (issue 19): torchvision's networks
and torch.nn transformers and recurrent nets, with seeded random weights,
exported through torch.onnx (opset 17). Nothing is downloaded.

Runs under Debian's python3 with python3-torch and python3-torchvision
(`tools/setup.sh --zoo` installs them; the project's .venv has no torch):

  /usr/bin/python3 tools/models/zoo.py --list
  /usr/bin/python3 tools/models/zoo.py -o zoo/ [NAME ...]
  /usr/bin/python3 tools/models/zoo.py -o zoo8/ --batch 8 [NAME ...]

Each model becomes zoo/NAME.onnx with one input named "input" (images
[N, 3, H, W], clips [N, 3, T, H, W], or token ids [N, S] as int64, N the
batch, 1 unless --batch says) and one output; BatchNorm statistics are
drawn too, so that no layer is an identity. tools/benchmark.py takes the
files as --models zoo/NAME.onnx. torch.onnx writes the batch into some
models' Reshape shapes (ShuffleNetV2's channel shuffle, the attention
heads of the transformers), which no edit of the file undoes; so a batch
other than 1 is exported as such, and tools/benchmark.py runs a file whose
inputs already have the batch it asks for as it is.
"""

import argparse
import sys
from pathlib import Path


def _vision(name, size=224, **kwargs):
    def make():
        import torchvision
        return getattr(torchvision.models, name)(weights=None, **kwargs), (1, 3, size, size)
    return make


def _video(name, frames=8, size=112):
    def make():
        import torchvision
        return getattr(torchvision.models.video, name)(weights=None), (1, 3, frames, size, size)
    return make


def _segmentation(name, size=224):
    def make():
        import torch
        import torchvision

        class Out(torch.nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x)["out"]

        net = getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None, aux_loss=False)
        return Out(net), (1, 3, size, size)
    return make


def _vit(layers=2):
    def make():
        from torchvision.models.vision_transformer import VisionTransformer
        return VisionTransformer(image_size=224, patch_size=16, num_layers=layers,
                                 num_heads=12, hidden_dim=768, mlp_dim=3072), (1, 3, 224, 224)
    return make


def _text(seq, causal=False, layers=4, hidden=512, heads=8, vocab=8000):
    """A BERT-style encoder (post-norm, GELU) or, with `causal`, a GPT-style
    decoder (pre-norm, a causal mask) over token embeddings."""
    def make():
        import torch

        class Text(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.tokens = torch.nn.Embedding(vocab, hidden)
                self.positions = torch.nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
                layer = torch.nn.TransformerEncoderLayer(
                    hidden, heads, 4 * hidden, dropout=0.0, activation="gelu",
                    batch_first=True, norm_first=causal)
                self.encoder = torch.nn.TransformerEncoder(layer, layers)
                self.norm = torch.nn.LayerNorm(hidden)
                self.head = torch.nn.Linear(hidden, vocab if causal else hidden)
                mask = torch.triu(torch.full((seq, seq), float("-inf")), 1)
                self.register_buffer("mask", mask if causal else None)

            def forward(self, ids):
                x = self.tokens(ids) + self.positions
                x = self.encoder(x, mask=self.mask)
                return self.head(self.norm(x))

        return Text(), (1, seq)
    return make


def _recurrent(kind, seq=64, vocab=5000, emb=128, hidden=256, layers=2, tags=20):
    def make():
        import torch

        class Tagger(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(vocab, emb)
                self.rnn = getattr(torch.nn, kind)(emb, hidden, layers, batch_first=True)
                self.out = torch.nn.Linear(hidden, tags)

            def forward(self, ids):
                y, _ = self.rnn(self.embed(ids))
                return self.out(y)

        return Tagger(), (1, seq)
    return make


MODELS = {
    # classification CNNs
    "resnet18": _vision("resnet18"),
    "resnet50": _vision("resnet50"),
    "resnext50_32x4d": _vision("resnext50_32x4d"),
    "wide_resnet50_2": _vision("wide_resnet50_2"),
    "densenet121": _vision("densenet121"),
    "googlenet": _vision("googlenet", aux_logits=False, init_weights=True),
    "inception_v3": _vision("inception_v3", size=299, aux_logits=False, init_weights=True),
    "vgg16": _vision("vgg16"),
    "mobilenet_v2": _vision("mobilenet_v2"),
    "mobilenet_v3_small": _vision("mobilenet_v3_small"),
    "mobilenet_v3_large": _vision("mobilenet_v3_large"),
    "efficientnet_b0": _vision("efficientnet_b0"),
    "regnet_y_400mf": _vision("regnet_y_400mf"),
    "mnasnet1_0": _vision("mnasnet1_0"),
    "shufflenet_v2_x1_0": _vision("shufflenet_v2_x1_0"),
    "squeezenet1_1": _vision("squeezenet1_1"),
    "convnext_tiny": _vision("convnext_tiny"),
    # transformers
    "vit_2layer": _vit(2),
    "swin_t": _vision("swin_t"),
    "bert_seq128": _text(128),
    "bert_seq384": _text(384),
    "gpt_decoder": _text(128, causal=True),
    # segmentation
    "fcn_resnet50": _segmentation("fcn_resnet50"),
    "deeplabv3_mobilenet_v3_large": _segmentation("deeplabv3_mobilenet_v3_large"),
    "lraspp_mobilenet_v3_large": _segmentation("lraspp_mobilenet_v3_large"),
    # video (3-D convolutions)
    "r3d_18": _video("r3d_18"),
    "mc3_18": _video("mc3_18"),
    "r2plus1d_18": _video("r2plus1d_18"),
    # recurrent
    "lstm_tagger": _recurrent("LSTM"),
    "gru_tagger": _recurrent("GRU"),
}


def randomize_statistics(net, seed):
    """Draws BatchNorm's running statistics and affine parameters (they
    start as the identity), so that every layer computes something."""
    import torch
    generator = torch.Generator().manual_seed(seed)
    for module in net.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            n = module.num_features
            with torch.no_grad():
                module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(n, generator=generator) * 0.7 + 0.8)
                if module.affine:
                    module.weight.copy_(torch.rand(n, generator=generator) * 0.4 + 0.8)
                    module.bias.copy_(torch.randn(n, generator=generator) * 0.1)


def export_net(make, name, out, seed=0, batch=1):
    """Exports the network that make() returns, with its example input's
    shape, as out/NAME.onnx (input "input", output "output")."""
    import torch
    torch.manual_seed(seed)
    net, shape = make()
    shape = (batch, *shape[1:])
    net.eval()
    randomize_statistics(net, seed)
    if len(shape) == 2:  # token ids
        example = torch.randint(0, 100, shape, dtype=torch.int64)
    else:
        example = torch.randn(*shape)
    path = Path(out) / f"{name}.onnx"
    # With gradients on, torch.nn's attention keeps its ONNX-exportable
    # path (eval mode under no_grad takes fused kernels that torch.onnx
    # cannot export).
    torch.onnx.export(net, (example,), str(path), opset_version=17,
                      input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
    return path


def export(name, out, seed=0, batch=1):
    return export_net(MODELS[name], name, out, seed, batch)


def cli(models, doc, batch=True):
    """The command line of zoo.py (and of blocks.py, over its `models`, a
    dict of name -> function returning (net, input shape))."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="names (default: all)")
    parser.add_argument("-o", "--out", type=Path, help="folder for NAME.onnx")
    parser.add_argument("--seed", type=int, default=0)
    if batch:
        parser.add_argument("--batch", type=int, default=1,
                            help="the batch the model is exported at (default: 1)")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        print("\n".join(models))
        return 0
    if not args.out:
        parser.error("give -o FOLDER (or --list)")
    size = getattr(args, "batch", 1)
    if size < 1:
        parser.error(f"--batch must be at least 1, not {size}")
    unknown = [m for m in args.models if m not in models]
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)} (see --list)")
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in args.models or models:
        try:
            path = export_net(models[name], name, args.out, args.seed, size)
            print(f"{name}: {path} ({path.stat().st_size / 1e6:.1f} MB)", flush=True)
        except Exception as error:  # report each, go on with the others
            failed += 1
            print(f"{name}: export failed: {type(error).__name__}: {error}",
                  file=sys.stderr, flush=True)
    return 1 if failed else 0


def main():
    return cli(MODELS, __doc__)


if __name__ == "__main__":
    sys.exit(main())
