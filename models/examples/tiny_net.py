"""TinyNet: a small CNN (input 1x3x32x32, 10 classes) that uses every op of the winfer model
format, for tests and as the worked example of bringing a PyTorch model to winfer.

Its YAML description is tiny_net.yaml (layer names = the module names below). Weights and golden
files are made with:

    /usr/bin/python3 models/tools/export_torch.py --module models/examples/tiny_net.py:TinyNet \\
        --yaml models/examples/tiny_net.yaml -o models/examples/tiny_net.safetensors \\
        --golden models/examples/tiny_net --batch 2 --seed 0 --random-bn --verify
"""

import torch
import torch.nn.functional as F
from torch import nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        # 3x32x32 -> 8x16x16: stride 2 with "same"-style padding, one extra row/column at the
        # bottom/right (F.pad in forward; YAML padding [top, left, bottom, right] = [0, 0, 1, 1])
        self.stem = nn.Conv2d(3, 8, 3, stride=2, bias=True)
        self.stem_bn = nn.BatchNorm2d(8)
        self.stem_relu = nn.ReLU()
        # dilated grouped conv and a depthwise conv, summed with the stem output (residual)
        self.dilated = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2, bias=False)
        self.dilated_bn = nn.BatchNorm2d(8)
        self.dilated_relu6 = nn.ReLU6()
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.depthwise_bn = nn.BatchNorm2d(8, eps=1e-3)
        self.add_relu = nn.ReLU()
        # 16x16 -> 8x8; with ceil_mode the last window hangs over the edge
        self.pool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        # ShuffleNet-style unit: split in halves, 1x1 conv on the second, concat, shuffle
        self.branch = nn.Conv2d(4, 4, 1)
        self.branch_relu = nn.ReLU()
        # rectangular kernel 3x1 with padding [1, 0]
        self.tall = nn.Conv2d(8, 12, kernel_size=(3, 1), padding=(1, 0), bias=False)
        self.tall_bn = nn.BatchNorm2d(12)
        self.tall_relu = nn.ReLU()
        # 8x8 -> 4x4, padded border cells average over the real pixels only
        self.pool2 = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.head = nn.Conv2d(12, 16, 2)          # 4x4 -> 3x3
        self.head_relu = nn.ReLU()
        self.identity = nn.Identity()
        self.pool3 = nn.AdaptiveAvgPool2d(2)      # 3x3 -> 2x2, overlapping bins
        self.fc1 = nn.Linear(64, 32, bias=False)
        self.fc1_relu = nn.ReLU()
        self.dropout = nn.Dropout(0.25)
        self.fc2 = nn.Linear(32, 10)
        self.reset_parameters()

    def reset_parameters(self):
        """He-normal weights and small random biases: activations stay O(1) through the net and
        the logits spread out, so that the golden output is sensitive to every layer (PyTorch's
        default init gives a nearly uniform softmax)."""
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.normal_(module.bias, std=0.1)

    @staticmethod
    def channel_shuffle(x, groups):
        n, c, h, w = x.shape
        return x.reshape(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)

    def forward(self, x):
        x = F.pad(x, (0, 1, 0, 1))  # (left, right, top, bottom)
        stem = self.stem_relu(self.stem_bn(self.stem(x)))
        y = self.dilated_relu6(self.dilated_bn(self.dilated(stem)))
        y = self.depthwise_bn(self.depthwise(y))
        x = self.pool1(self.add_relu(stem + y))

        a, b = x.chunk(2, dim=1)
        x = torch.cat([a, self.branch_relu(self.branch(b))], dim=1)
        x = self.channel_shuffle(x, 2)

        x = self.tall_relu(self.tall_bn(self.tall(x)))
        a, b = torch.split(x, [4, 8], dim=1)
        x = self.channel_shuffle(torch.cat([b, a], dim=1), 3)

        x = self.pool2(x)
        x = self.identity(self.head_relu(self.head(x)))
        x = torch.flatten(self.pool3(x), 1)
        x = self.dropout(self.fc1_relu(self.fc1(x)))
        return torch.softmax(self.fc2(x), dim=1)
