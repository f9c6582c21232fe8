"""The Fashion-MNIST networks of models/fashion/: PyTorch modules and their winfer YAML.

Three small networks, one per family the engine targets, sized for 28x28 grayscale input:

    resnet   a ResNet-8: 3x3 stem and three stages of one torchvision BasicBlock each
    vgg      a VGG with batch norm: 3x3 conv stacks, 2x2 max pools, a two-layer classifier
    shufflenet  torchvision's ShuffleNetV2 with a 1-channel stride-1 stem and narrow stages

Each module uses torchvision's module names (BasicBlock, InvertedResidual, nn.Sequential
indices), so its state_dict() keys are the YAML's parameter names. The YAML is written with the
helpers of models/tools/gen_zoo.py, the same ones that describe the ImageNet zoo.
"""

import os
import sys

import torch
import torch.nn as nn
from torchvision.models.resnet import BasicBlock
from torchvision.models.shufflenetv2 import ShuffleNetV2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "tools")))
import gen_zoo  # noqa: E402

LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
# Mean and standard deviation of the training split's pixels scaled to [0, 1].
MEAN, STD = 0.2860, 0.3530
NUM_CLASSES = 10

# ---------------------------------------------------------------------------------------------
# ResNet-8

RESNET_WIDTHS = [16, 32, 64]


class FashionResNet(nn.Module):
    """3x3 stem at 28x28, then one BasicBlock per stage, each halving the resolution (14, 7, 4)."""

    def __init__(self, widths=RESNET_WIDTHS):
        super().__init__()
        self.conv1 = nn.Conv2d(1, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        channels = widths[0]
        for stage, width in enumerate(widths, start=1):
            downsample = nn.Sequential(nn.Conv2d(channels, width, 1, 2, bias=False), nn.BatchNorm2d(width))
            setattr(self, f"layer{stage}", nn.Sequential(BasicBlock(channels, width, 2, downsample)))
            channels = width
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, NUM_CLASSES)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet_yaml_net():
    net = gen_zoo.Net()
    net.comment("stem (28x28)")
    net.conv("conv1", 1, RESNET_WIDTHS[0], 3, 1, 1, bias=False)
    net.bn("bn1", RESNET_WIDTHS[0])
    net.relu("relu")
    channels = RESNET_WIDTHS[0]
    for stage, width in enumerate(RESNET_WIDTHS, start=1):
        net.comment(f"layer{stage}.0 (basic block, stride 2)")
        channels = gen_zoo.basic_block(net, f"layer{stage}.0", channels, width, 2)
    net.comment("head")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.linear("fc", channels, NUM_CLASSES)
    return net


# ---------------------------------------------------------------------------------------------
# VGG with batch norm

VGG_CONFIG = [16, "M", 32, 32, "M", 64, 64, "M"]  # "M" = 2x2 max pool: 28 -> 14 -> 7 -> 3
VGG_HIDDEN = 128


class FashionVGG(nn.Module):
    def __init__(self, config=VGG_CONFIG):
        super().__init__()
        layers, channels = [], 1
        for item in config:
            if item == "M":
                layers.append(nn.MaxPool2d(2, 2))
                continue
            layers += [nn.Conv2d(channels, item, 3, 1, 1), nn.BatchNorm2d(item), nn.ReLU(inplace=True)]
            channels = item
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(channels * 3 * 3, VGG_HIDDEN), nn.ReLU(inplace=True), nn.Dropout(0.3),
            nn.Linear(VGG_HIDDEN, NUM_CLASSES))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def vgg_yaml_net():
    net = gen_zoo.Net()
    net.comment("features (nn.Sequential indices, as torchvision's VGG)")
    index, channels = 0, 1
    for item in VGG_CONFIG:
        if item == "M":
            net.layer(f"features.{index}", "maxpool2d", kernel_size=2, stride=2)
            index += 1
            continue
        net.conv(f"features.{index}", channels, item, 3, 1, 1)
        net.bn(f"features.{index + 1}", item)
        net.relu(f"features.{index + 2}")
        index += 3
        channels = item
    net.comment("classifier")
    net.layer("flatten", "flatten")
    net.linear("classifier.0", channels * 3 * 3, VGG_HIDDEN)
    net.relu("classifier.1")
    net.layer("classifier.2", "dropout", p=0.3)
    net.linear("classifier.3", VGG_HIDDEN, NUM_CLASSES)
    return net


# ---------------------------------------------------------------------------------------------
# ShuffleNetV2

SHUFFLE_REPEATS = [2, 3, 2]
SHUFFLE_WIDTHS = [24, 48, 96, 192, 256]  # stem, stage2, stage3, stage4, conv5


class FashionShuffleNet(ShuffleNetV2):
    """torchvision's ShuffleNetV2 with a 1-channel stride-1 stem; the max pool takes 28 -> 14,
    and the stages 14 -> 7 -> 4 -> 2."""

    def __init__(self):
        super().__init__(SHUFFLE_REPEATS, SHUFFLE_WIDTHS, num_classes=NUM_CLASSES)
        stem = SHUFFLE_WIDTHS[0]
        self.conv1 = nn.Sequential(nn.Conv2d(1, stem, 3, 1, 1, bias=False), nn.BatchNorm2d(stem),
                                   nn.ReLU(inplace=True))


def shufflenet_yaml_net():
    net = gen_zoo.Net()
    net.comment("stem (28x28, stride 1), max pool to 14x14")
    gen_zoo.conv_bn(net, "conv1", 0, 1, SHUFFLE_WIDTHS[0], 3, 1, 1)
    net.relu("conv1.2")
    net.layer("maxpool", "maxpool2d", kernel_size=3, stride=2, padding=1)
    channels = SHUFFLE_WIDTHS[0]
    for stage, (count, width) in enumerate(zip(SHUFFLE_REPEATS, SHUFFLE_WIDTHS[1:4]), start=2):
        for i in range(count):
            p = f"stage{stage}.{i}"
            if i == 0:
                net.comment(f"{p} (down-sampling unit, stride 2)")
                gen_zoo.down_unit(net, p, channels, width)
            else:
                net.comment(f"{p} (basic unit)")
                gen_zoo.basic_unit(net, p, width)
            channels = width
    net.comment("head (x.mean([2, 3]) == global average pool + flatten)")
    gen_zoo.conv_bn(net, "conv5", 0, channels, SHUFFLE_WIDTHS[4])
    net.relu("conv5.2")
    net.layer("globalpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.linear("fc", SHUFFLE_WIDTHS[4], NUM_CLASSES)
    return net


# ---------------------------------------------------------------------------------------------
# Registry and YAML text

MODELS = {
    "resnet": (FashionResNet, resnet_yaml_net, "ResNet-8 (one BasicBlock per stage, widths 16/32/64)"),
    "vgg": (FashionVGG, vgg_yaml_net, "VGG with batch norm (convs 16, 32x2, 64x2; classifier 576-128-10)"),
    "shufflenet": (FashionShuffleNet, shufflenet_yaml_net,
                   "ShuffleNetV2 (stages 2/3/2 units, widths 48/96/192, conv5 256)"),
}


def build_module(name):
    return MODELS[name][0]()


def model_stem(name):
    """File name stem of a model: models/fashion/<stem>.yaml, .safetensors, ..."""
    return f"fashion_{name}"


def render_yaml(name):
    _, describe, description = MODELS[name]
    net = describe()
    stem = model_stem(name)
    lines = [
        "# Generated by models/fashion/train.py (see models/fashion/README.md); do not edit by hand.",
        "# Layer names are the PyTorch module paths of models/fashion/nets.py, so parameters are",
        "# its state_dict() keys. Trained on Fashion-MNIST (white objects on a black background).",
        "format: winfer/1",
        f"name: {stem}",
        f"description: Fashion-MNIST classifier, {description}",
        "input: {name: input, shape: [1, 1, 28, 28]}",
        f"weights: {stem}.safetensors",
        "labels: labels.txt",
        "preprocess:",
        "  resize: 28",
        "  crop: 28",
        f"  mean: [{MEAN!r}]",
        f"  std: [{STD!r}]",
        "  channel_order: GRAY",
        f"outputs: [{net.last}]",
        "layers:",
    ]
    for kind, row in net.rows:
        lines.append(f"  # {row}" if kind == "comment" else f"  - {gen_zoo.flow(row)}")
    return "\n".join(lines) + "\n"
