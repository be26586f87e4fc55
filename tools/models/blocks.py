#!/usr/bin/python3
"""Building blocks of architectures outside the zoo, exported alone
(issue 19: speed on models Kiln has not seen). Each is a layer pattern that
a family of models repeats: 1-D convolutions (audio front ends, conformer
convolution modules), transposed convolutions (decoders, GAN generators,
U-Nets, 2-D and 3-D), convolutions on odd map sizes without an activation,
1x7/7x1 factorised convolutions, YOLO's SPPF (5x5 max pools) and neck,
style transfer (reflection pads, instance norms), group norms, pixel
shuffles, attention. Seeded random weights, torch.onnx (opset 17), nothing
downloaded; like zoo.py, it runs under Debian's python3 with torch:

  /usr/bin/python3 tools/models/blocks.py --list
  /usr/bin/python3 tools/models/blocks.py -o blocks/ [NAME ...]

Each block becomes blocks/NAME.onnx with one input named "input" and one
output; tools/benchmark.py takes them as --models blocks/NAME.onnx.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo import cli  # noqa: E402


def _blocks():
    import torch
    from torch import nn
    F = nn.functional

    class Conv1dStack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(
                nn.Conv1d(80, 256, 3, padding=1), nn.GELU(),
                nn.Conv1d(256, 256, 3, stride=2, padding=1), nn.GELU(),
                nn.Conv1d(256, 256, 5, padding=2, groups=256), nn.Conv1d(256, 256, 1))

        def forward(self, x):
            return self.layers(x)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(
                nn.ConvTranspose2d(256, 128, 4, 2, 1), nn.ReLU(),
                nn.ConvTranspose2d(128, 64, 4, 2, 1), nn.ReLU(),
                nn.ConvTranspose2d(64, 32, 3, 2, 1, output_padding=1))

        def forward(self, x):
            return self.layers(x)

    class Factorised(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(64, 64, (1, 7), padding=(0, 3))
            self.b = nn.Conv2d(64, 64, (7, 1), padding=(3, 0))

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))

    class OddMap(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(128, 256, 1)
            self.b = nn.Conv2d(256, 128, 2, padding=1)

        def forward(self, x):
            return self.b(self.a(x))

    class SPPF(nn.Module):
        def __init__(self, c=256):
            super().__init__()
            self.cv1, self.cv2 = nn.Conv2d(c, c // 2, 1), nn.Conv2d(c * 2, c, 1)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = F.silu(self.cv1(x))
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return F.silu(self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1)))

    class YoloNeck(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(256, 128, 1)
            self.c2 = nn.Conv2d(256, 128, 3, padding=1)
            self.c3 = nn.Conv2d(128, 128, 3, stride=2, padding=1)

        def forward(self, x):
            b = F.silu(self.c1(x))
            u = F.interpolate(b, scale_factor=2, mode="nearest")
            return F.leaky_relu(self.c3(F.silu(self.c2(torch.cat([u, u], 1)))), 0.1)

    class Conformer(nn.Module):
        def __init__(self, d=256):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.pw1, self.pw2 = nn.Conv1d(d, 2 * d, 1), nn.Conv1d(d, d, 1)
            self.dw = nn.Conv1d(d, d, 31, padding=15, groups=d)
            self.bn = nn.BatchNorm1d(d)

        def forward(self, x):
            y = F.glu(self.pw1(self.norm(x).transpose(1, 2)), dim=1)
            return x + self.pw2(F.silu(self.bn(self.dw(y)))).transpose(1, 2)

    class WhisperFront(nn.Module):
        def __init__(self, d=384):
            super().__init__()
            self.c1 = nn.Conv1d(80, d, 3, padding=1)
            self.c2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
            self.layer = nn.TransformerEncoderLayer(d, 6, 4 * d, batch_first=True,
                                                    norm_first=True, activation="gelu")

        def forward(self, x):
            x = F.gelu(self.c2(F.gelu(self.c1(x))))
            return self.layer(x.transpose(1, 2))

    class UNet(nn.Module):
        """A U-Net level: two convolutions, a pool, an upsampling by a
        transposed convolution, a skip concat; 2-D or 3-D."""
        def __init__(self, conv, up, pool, channels, skip):
            super().__init__()
            self.pool, self.skip = pool, skip
            c = channels
            self.d1 = conv(c, 2 * c, 3, padding=1)
            self.d2 = conv(2 * c, 2 * c, 3, padding=1)
            self.up = up(2 * c, c if skip == "input" else 2 * c, 2, 2)
            self.out = conv(2 * c if skip == "input" else 4 * c, c, 3, padding=1)

        def forward(self, x):
            a = torch.relu(self.d1(x))
            b = torch.relu(self.d2(self.pool(a, 2)))
            return torch.relu(self.out(torch.cat([self.up(b), x if self.skip == "input" else a], 1)))

    def dcgan():
        layers, channels = [nn.ConvTranspose2d(100, 512, 4, 1, 0)], 512
        for _ in range(3):
            layers += [nn.BatchNorm2d(channels), nn.ReLU(),
                       nn.ConvTranspose2d(channels, channels // 2, 4, 2, 1)]
            channels //= 2
        layers += [nn.BatchNorm2d(channels), nn.ReLU(),
                   nn.ConvTranspose2d(channels, 3, 4, 2, 1), nn.Tanh()]
        return nn.Sequential(*layers)

    def style():
        def norm(c):
            return nn.InstanceNorm2d(c, affine=True)
        return nn.Sequential(
            nn.ReflectionPad2d(4), nn.Conv2d(3, 32, 9), norm(32), nn.ReLU(),
            nn.ReflectionPad2d(1), nn.Conv2d(32, 64, 3, 2), norm(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 3, 2, 1, output_padding=1), norm(32), nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"), nn.ReflectionPad2d(4),
            nn.Conv2d(32, 3, 9))

    def group_norm():
        return nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.GroupNorm(32, 128),
                             nn.SiLU(), nn.Conv2d(128, 128, 3, padding=1),
                             nn.GroupNorm(32, 128), nn.SiLU())

    def pixel_shuffle():
        return nn.Sequential(nn.Conv2d(64, 256, 3, padding=1), nn.PixelShuffle(2),
                             nn.Conv2d(64, 3, 3, padding=1))

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(256, 8, batch_first=True)
            self.norm = nn.LayerNorm(256)

        def forward(self, x):
            return self.norm(x + self.attn(x, x, x, need_weights=False)[0])

    return {
        "conv1d_stack": (Conv1dStack, (1, 80, 1000)),
        "decoder": (Decoder, (1, 256, 14, 14)),
        "factorised_1x7": (Factorised, (1, 64, 17, 17)),
        "odd_map": (OddMap, (1, 128, 29, 29)),
        "sppf": (SPPF, (1, 256, 20, 20)),
        "yolo_neck": (YoloNeck, (1, 256, 40, 40)),
        "conformer_conv": (Conformer, (1, 200, 256)),
        "whisper_front": (WhisperFront, (1, 80, 600)),
        "unet": (lambda: UNet(nn.Conv2d, nn.ConvTranspose2d, F.max_pool2d, 64, "input"),
                 (1, 64, 64, 64)),
        "unet3d": (lambda: UNet(nn.Conv3d, nn.ConvTranspose3d, F.max_pool3d, 16, "level"),
                   (1, 16, 16, 32, 32)),
        "dcgan": (dcgan, (1, 100, 1, 1)),
        "style_transfer": (style, (1, 3, 128, 128)),
        "group_norm": (group_norm, (1, 64, 64, 64)),
        "pixel_shuffle": (pixel_shuffle, (1, 64, 64, 64)),
        "attention": (Attention, (1, 256, 256)),
    }


NAMES = ["conv1d_stack", "decoder", "factorised_1x7", "odd_map", "sppf",
         "yolo_neck", "conformer_conv", "whisper_front", "unet", "unet3d",
         "dcgan", "style_transfer", "group_norm", "pixel_shuffle", "attention"]


def _factory(name):
    def make():
        build, shape = _blocks()[name]
        return build(), shape
    return make


BLOCKS = {name: _factory(name) for name in NAMES}


if __name__ == "__main__":
    sys.exit(cli(BLOCKS, __doc__, batch=False))
