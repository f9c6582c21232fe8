#!/usr/bin/python3
"""Generate the winfer model zoo YAML files (models/zoo/*.yaml).

Each network family (ResNet, ResNeXt and Wide ResNet, VGG, ShuffleNetV2, SqueezeNet, MobileNet,
MNASNet, EfficientNet, RegNet, AlexNet, GoogLeNet, Inception v3, DenseNet) is described here
from its architecture, with layer names equal to torchvision's module paths, so the
parameter names are exactly torchvision's state_dict() keys. Nothing is traced; check_zoo.py
proves each file equals torchvision.

Usage:
    /usr/bin/python3 models/tools/gen_zoo.py                 # (re)write every zoo file
    /usr/bin/python3 models/tools/gen_zoo.py resnet18 vgg16  # only these
    /usr/bin/python3 models/tools/gen_zoo.py --check         # exit 1 if a file differs
"""

import argparse
import math
import os
import sys

TOOLS = os.path.dirname(os.path.abspath(__file__))
ZOO_DIR = os.path.normpath(os.path.join(TOOLS, "..", "zoo"))
COMMAND = "/usr/bin/python3 models/tools/gen_zoo.py"

IMAGENET_PREPROCESS = [
    ("resize", 256), ("crop", 224),
    ("mean", [0.485, 0.456, 0.406]), ("std", [0.229, 0.224, 0.225]),
    ("channel_order", "RGB"),
]


# ---------------------------------------------------------------------------------------------
# A graph under construction


class Net:
    """Collects layers in execution order. Each add_* returns the name of the output tensor."""

    def __init__(self):
        self.rows = []       # ("layer", dict) or ("comment", text)
        self.last = "input"

    def comment(self, text):
        self.rows.append(("comment", text))

    def layer(self, name, op, input=None, inputs=None, **attrs):
        entry = {"name": name, "op": op}
        if inputs is not None:
            entry["inputs"] = list(inputs)
        elif input is not None and input != self.last:
            entry["input"] = input
        entry.update(attrs)
        self.rows.append(("layer", entry))
        self.last = name
        return name

    def conv(self, name, cin, cout, k, stride=1, padding=0, groups=1, bias=True, input=None):
        attrs = {"in_channels": cin, "out_channels": cout, "kernel_size": k}
        if stride != 1:
            attrs["stride"] = stride
        if padding != 0:
            attrs["padding"] = padding
        if groups != 1:
            attrs["groups"] = groups
        if not bias:
            attrs["bias"] = False
        return self.layer(name, "conv2d", input=input, **attrs)

    def bn(self, name, channels, input=None, eps=None):
        attrs = {"num_features": channels}
        if eps is not None:
            attrs["eps"] = eps
        return self.layer(name, "batchnorm2d", input=input, **attrs)

    def relu(self, name, input=None):
        return self.layer(name, "relu", input=input)

    def linear(self, name, fin, fout, input=None):
        return self.layer(name, "linear", input=input, in_features=fin, out_features=fout)


# ---------------------------------------------------------------------------------------------
# ResNet (He et al. 2015; torchvision layout, stride in the 3x3 conv of bottlenecks: "v1.5")

RESNETS = {
    "resnet18": ("basic", [2, 2, 2, 2]),
    "resnet34": ("basic", [3, 4, 6, 3]),
    "resnet50": ("bottleneck", [3, 4, 6, 3]),
    "resnet101": ("bottleneck", [3, 4, 23, 3]),
    "resnet152": ("bottleneck", [3, 8, 36, 3]),
}


def basic_block(net, p, cin, planes, stride):
    x = net.last
    net.conv(f"{p}.conv1", cin, planes, 3, stride, 1, bias=False)
    net.bn(f"{p}.bn1", planes)
    net.relu(f"{p}.relu1")
    net.conv(f"{p}.conv2", planes, planes, 3, 1, 1, bias=False)
    out = net.bn(f"{p}.bn2", planes)
    shortcut = downsample(net, p, x, cin, planes, stride)
    net.layer(f"{p}.add", "add", inputs=[out, shortcut])
    net.relu(f"{p}.relu2")
    return planes


def bottleneck_block(net, p, cin, planes, stride, groups=1, width_per_group=64):
    """torchvision's Bottleneck: its 3x3 conv has int(planes * width_per_group / 64) * groups
    channels in GROUPS groups (ResNeXt: 32 groups of 4, 8, ... channels; Wide ResNet: twice
    resnet50's width in one group)."""
    x = net.last
    width, cout = int(planes * (width_per_group / 64.0)) * groups, planes * 4
    net.conv(f"{p}.conv1", cin, width, 1, bias=False)
    net.bn(f"{p}.bn1", width)
    net.relu(f"{p}.relu1")
    net.conv(f"{p}.conv2", width, width, 3, stride, 1, groups=groups, bias=False)
    net.bn(f"{p}.bn2", width)
    net.relu(f"{p}.relu2")
    net.conv(f"{p}.conv3", width, cout, 1, bias=False)
    out = net.bn(f"{p}.bn3", cout)
    shortcut = downsample(net, p, x, cin, cout, stride)
    net.layer(f"{p}.add", "add", inputs=[out, shortcut])
    net.relu(f"{p}.relu3")
    return cout


def downsample(net, p, x, cin, cout, stride):
    """The shortcut: identity, or 1x1 conv + bn when the shape changes."""
    if stride == 1 and cin == cout:
        return x
    net.conv(f"{p}.downsample.0", cin, cout, 1, stride, bias=False, input=x)
    return net.bn(f"{p}.downsample.1", cout)


# ResNeXt (Xie et al. 2016) and Wide ResNet (Zagoruyko and Komodakis 2016): resnet50's layout with
# torchvision's Bottleneck(groups, width_per_group)
RESNEXTS = {  # repeats per stage, groups, width per group
    "resnext50_32x4d": ([3, 4, 6, 3], 32, 4),
    "wide_resnet50_2": ([3, 4, 6, 3], 1, 128),
}


def resnet(name):
    if name in RESNEXTS:
        repeats, groups, width_per_group = RESNEXTS[name]
        kind = f"bottleneck, {groups} groups" if groups > 1 else "wide bottleneck"

        def block(net, p, cin, planes, stride):
            return bottleneck_block(net, p, cin, planes, stride, groups, width_per_group)
    else:
        kind, repeats = RESNETS[name]
        block = basic_block if kind == "basic" else bottleneck_block
    net = Net()
    net.comment("stem")
    net.conv("conv1", 3, 64, 7, 2, 3, bias=False)
    net.bn("bn1", 64)
    net.relu("relu")
    net.layer("maxpool", "maxpool2d", kernel_size=3, stride=2, padding=1)
    channels = 64
    for stage, (planes, count) in enumerate(zip([64, 128, 256, 512], repeats), start=1):
        for i in range(count):
            stride = 2 if stage > 1 and i == 0 else 1
            net.comment(f"layer{stage}.{i} ({kind} block, stride {stride})")
            channels = block(net, f"layer{stage}.{i}", channels, planes, stride)
    net.comment("head")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.linear("fc", channels, 1000)
    if name == "resnext50_32x4d":
        return net, ("ResNeXt-50 32x4d (Xie et al. 2016), torchvision layout, ImageNet 1000 "
                     "classes")
    if name == "wide_resnet50_2":
        return net, ("Wide ResNet-50-2 (Zagoruyko and Komodakis 2016), torchvision layout, "
                     "ImageNet 1000 classes")
    depth = name[len("resnet"):]
    return net, f"ResNet-{depth} (He et al. 2015), torchvision layout, ImageNet 1000 classes"


# ---------------------------------------------------------------------------------------------
# VGG (Simonyan & Zisserman 2014), with and without batch norm

VGG_CONFIGS = {  # "M" = 2x2 max pool
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg13": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
              512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}


def vgg(name):
    batch_norm = name.endswith("_bn")
    config = VGG_CONFIGS[name.replace("_bn", "")]
    net = Net()
    net.comment("features (torchvision numbers the modules of nn.Sequential 0, 1, 2, ...)")
    index, channels = 0, 3
    for item in config:
        if item == "M":
            net.layer(f"features.{index}", "maxpool2d", kernel_size=2, stride=2)
            index += 1
            continue
        net.conv(f"features.{index}", channels, item, 3, 1, 1)
        if batch_norm:
            net.bn(f"features.{index + 1}", item)
        net.relu(f"features.{index + 1 + batch_norm}")
        index += 2 + batch_norm
        channels = item
    net.comment("classifier")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=7)
    net.layer("flatten", "flatten")
    net.linear("classifier.0", channels * 7 * 7, 4096)
    net.relu("classifier.1")
    net.layer("classifier.2", "dropout")
    net.linear("classifier.3", 4096, 4096)
    net.relu("classifier.4")
    net.layer("classifier.5", "dropout")
    net.linear("classifier.6", 4096, 1000)
    depth = name[3:5]
    bn_text = " with batch norm" if batch_norm else ""
    return net, f"VGG-{depth}{bn_text} (Simonyan & Zisserman 2014), ImageNet 1000 classes"


# ---------------------------------------------------------------------------------------------
# ShuffleNetV2 (Ma et al. 2018)

SHUFFLENETS = {  # stage output channels: conv1, stage2, stage3, stage4, conv5
    "shufflenet_v2_x0_5": [24, 48, 96, 192, 1024],
    "shufflenet_v2_x1_0": [24, 116, 232, 464, 1024],
    "shufflenet_v2_x1_5": [24, 176, 352, 704, 1024],
    "shufflenet_v2_x2_0": [24, 244, 488, 976, 2048],
}
SHUFFLENET_REPEATS = [4, 8, 4]


def conv_bn(net, p, index, cin, cout, k=1, stride=1, padding=0, groups=1, input=None):
    """conv (no bias) at p.index and its batch norm at p.(index+1); returns the bn name."""
    net.conv(f"{p}.{index}", cin, cout, k, stride, padding, groups, bias=False, input=input)
    return net.bn(f"{p}.{index + 1}", cout)


def branch2(net, p, x, cin, half, stride):
    """1x1 conv-bn-relu, 3x3 depthwise conv-bn (stride), 1x1 conv-bn-relu."""
    conv_bn(net, p, 0, cin, half, input=x)
    net.relu(f"{p}.2")
    conv_bn(net, p, 3, half, half, 3, stride, 1, groups=half)
    conv_bn(net, p, 5, half, half)
    return net.relu(f"{p}.7")


def down_unit(net, p, cin, cout):
    """Stride-2 unit: both branches see the whole input; their outputs are concatenated."""
    x, half = net.last, cout // 2
    conv_bn(net, f"{p}.branch1", 0, cin, cin, 3, 2, 1, groups=cin)
    conv_bn(net, f"{p}.branch1", 2, cin, half)
    left = net.relu(f"{p}.branch1.4")
    right = branch2(net, f"{p}.branch2", x, cin, half, 2)
    net.layer(f"{p}.concat", "concat", inputs=[left, right])
    return net.layer(f"{p}.shuffle", "channel_shuffle", groups=2)


def basic_unit(net, p, channels):
    """Stride-1 unit: half the channels pass through, the other half go through branch2."""
    half = channels // 2
    split = net.layer(f"{p}.split", "split", chunks=2)
    right = branch2(net, f"{p}.branch2", f"{split}:1", half, half, 1)
    net.layer(f"{p}.concat", "concat", inputs=[f"{split}:0", right])
    return net.layer(f"{p}.shuffle", "channel_shuffle", groups=2)


def shufflenet(name):
    widths = SHUFFLENETS[name]
    net = Net()
    net.comment("stem")
    conv_bn(net, "conv1", 0, 3, widths[0], 3, 2, 1)
    net.relu("conv1.2")
    net.layer("maxpool", "maxpool2d", kernel_size=3, stride=2, padding=1)
    channels = widths[0]
    for stage, (count, cout) in enumerate(zip(SHUFFLENET_REPEATS, widths[1:4]), start=2):
        for i in range(count):
            p = f"stage{stage}.{i}"
            if i == 0:
                net.comment(f"{p} (down-sampling unit, stride 2)")
                down_unit(net, p, channels, cout)
            else:
                net.comment(f"{p} (basic unit: split, branch2 on the second half, concat)")
                basic_unit(net, p, cout)
            channels = cout
    net.comment("head (torchvision: x.mean([2, 3]) == global average pool + flatten)")
    conv_bn(net, "conv5", 0, channels, widths[4])
    net.relu("conv5.2")
    net.layer("globalpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.linear("fc", widths[4], 1000)
    width = name[len("shufflenet_v2_x"):].replace("_", ".")
    return net, f"ShuffleNetV2 {width}x (Ma et al. 2018), torchvision layout, ImageNet 1000 classes"


# ---------------------------------------------------------------------------------------------
# SqueezeNet (Iandola et al. 2016): 1.0 from the paper, 1.1 from its authors' repository

SQUEEZENETS = {  # features: ("conv", channels, kernel), "M" 3x3/2 max pool (ceil_mode), or a
    # Fire module (squeeze channels, expand channels of each of its 1x1 and 3x3 branches)
    "squeezenet1_0": [("conv", 96, 7), "M", (16, 64), (16, 64), (32, 128), "M", (32, 128),
                      (48, 192), (48, 192), (64, 256), "M", (64, 256)],
    "squeezenet1_1": [("conv", 64, 3), "M", (16, 64), (16, 64), "M", (32, 128), (32, 128), "M",
                      (48, 192), (48, 192), (64, 256), (64, 256)],
}


def fire(net, p, cin, squeeze, expand):
    """1x1 squeeze conv-relu, then 1x1 and 3x3 expand conv-relu side by side, concatenated."""
    net.conv(f"{p}.squeeze", cin, squeeze, 1)
    x = net.relu(f"{p}.squeeze_activation")
    net.conv(f"{p}.expand1x1", squeeze, expand, 1)
    left = net.relu(f"{p}.expand1x1_activation")
    net.conv(f"{p}.expand3x3", squeeze, expand, 3, padding=1, input=x)
    right = net.relu(f"{p}.expand3x3_activation")
    net.layer(f"{p}.concat", "concat", inputs=[left, right])
    return 2 * expand


def squeezenet(name):
    net = Net()
    net.comment("features (nn.Sequential: conv, relu, max pools and Fire modules)")
    index, channels = 0, 3
    for item in SQUEEZENETS[name]:
        if item == "M":
            net.layer(f"features.{index}", "maxpool2d", kernel_size=3, stride=2, ceil_mode=True)
            index += 1
        elif item[0] == "conv":
            _, cout, k = item
            net.conv(f"features.{index}", channels, cout, k, 2)
            net.relu(f"features.{index + 1}")
            index, channels = index + 2, cout
        else:
            net.comment(f"features.{index} (Fire: squeeze {item[0]}, expand 2x{item[1]})")
            channels = fire(net, f"features.{index}", channels, *item)
            index += 1
    net.comment("classifier (a 1x1 conv to the classes, relu, global average pool)")
    net.layer("classifier.0", "dropout")
    net.conv("classifier.1", channels, 1000, 1)
    net.relu("classifier.2")
    net.layer("classifier.3", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    version = name[len("squeezenet"):].replace("_", ".")
    return net, (f"SqueezeNet {version} (Iandola et al. 2016), torchvision layout, "
                 "ImageNet 1000 classes")


# ---------------------------------------------------------------------------------------------
# MobileNetV2 (Sandler et al. 2018)

MOBILENET_V2_SETTING = [  # (expansion, channels, repeats, stride of the first) per stage
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
    (6, 320, 1, 1),
]


def conv_bn_relu6(net, p, cin, cout, k, stride=1, groups=1):
    """torchvision's Conv2dNormActivation with ReLU6: p.0 conv (no bias), p.1 bn, p.2 relu6."""
    conv_bn(net, p, 0, cin, cout, k, stride, (k - 1) // 2, groups)
    return net.layer(f"{p}.2", "relu6")


def mobilenet_v2_block(net, p, cin, cout, stride, expansion):
    """Inverted residual: 1x1 expand (unless expansion 1), 3x3 depthwise, 1x1 linear projection;
    a residual add where the shape is kept."""
    x, hidden, index = net.last, cin * expansion, 0
    if expansion != 1:
        conv_bn_relu6(net, f"{p}.conv.0", cin, hidden, 1)
        index = 1
    conv_bn_relu6(net, f"{p}.conv.{index}", hidden, hidden, 3, stride, groups=hidden)
    out = conv_bn(net, f"{p}.conv", index + 1, hidden, cout)
    if stride == 1 and cin == cout:
        net.layer(f"{p}.add", "add", inputs=[x, out])
    return cout


def mobilenet_v2(name):
    net = Net()
    net.comment("stem")
    conv_bn_relu6(net, "features.0", 3, 32, 3, 2)
    index, channels = 1, 32
    for expansion, cout, repeats, first_stride in MOBILENET_V2_SETTING:
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            net.comment(f"features.{index} (inverted residual, expansion {expansion}, "
                        f"stride {stride})")
            channels = mobilenet_v2_block(net, f"features.{index}", channels, cout, stride,
                                          expansion)
            index += 1
    net.comment("head")
    conv_bn_relu6(net, f"features.{index}", channels, 1280, 1)
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.layer("classifier.0", "dropout", p=0.2)
    net.linear("classifier.1", 1280, 1000)
    return net, "MobileNetV2 (Sandler et al. 2018), torchvision layout, ImageNet 1000 classes"


# ---------------------------------------------------------------------------------------------
# MNASNet (Tan et al. 2018), the B1 variant as torchvision builds it

MNASNETS = {"mnasnet1_0": [32, 16, 24, 40, 80, 96, 192, 320]}  # stem, stem out, six stacks
MNASNET_STACKS = [  # (kernel, stride of the first, expansion, repeats): layers.8 ... layers.13
    (3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3), (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1),
]


def mnasnet_block(net, p, cin, cout, k, stride, expansion):
    """Inverted residual: 1x1 expand, kxk depthwise, 1x1 projection, each with batch norm (relu
    after the first two); a residual add where the shape is kept."""
    x, mid = net.last, cin * expansion
    conv_bn(net, f"{p}.layers", 0, cin, mid)
    net.relu(f"{p}.layers.2")
    conv_bn(net, f"{p}.layers", 3, mid, mid, k, stride, k // 2, groups=mid)
    net.relu(f"{p}.layers.5")
    out = conv_bn(net, f"{p}.layers", 6, mid, cout)
    if stride == 1 and cin == cout:
        net.layer(f"{p}.add", "add", inputs=[out, x])
    return cout


def mnasnet(name):
    depths = MNASNETS[name]
    net = Net()
    net.comment("stem: 3x3 conv, 3x3 depthwise, 1x1 projection (layers.0 ... layers.7)")
    conv_bn(net, "layers", 0, 3, depths[0], 3, 2, 1)
    net.relu("layers.2")
    conv_bn(net, "layers", 3, depths[0], depths[0], 3, 1, 1, groups=depths[0])
    net.relu("layers.5")
    conv_bn(net, "layers", 6, depths[0], depths[1])
    channels = depths[1]
    for stack, ((k, first_stride, expansion, repeats), cout) in enumerate(
            zip(MNASNET_STACKS, depths[2:]), start=8):
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            net.comment(f"layers.{stack}.{i} (inverted residual, {k}x{k} depthwise, expansion "
                        f"{expansion}, stride {stride})")
            channels = mnasnet_block(net, f"layers.{stack}.{i}", channels, cout, k, stride,
                                     expansion)
    net.comment("head (torchvision: x.mean([2, 3]) == global average pool + flatten)")
    conv_bn(net, "layers", 14, channels, 1280)
    net.relu("layers.16")
    net.layer("globalpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.layer("classifier.0", "dropout", p=0.2)
    net.linear("classifier.1", 1280, 1000)
    alpha = name[len("mnasnet"):].replace("_", ".")
    return net, f"MNASNet {alpha} (Tan et al. 2018), torchvision layout, ImageNet 1000 classes"


# ---------------------------------------------------------------------------------------------
# MobileNetV3 (Howard et al. 2019): inverted residuals, squeeze-and-excitation, hardswish

MOBILENET_V3 = {  # blocks (kernel, expanded, out, SE, activation, stride), classifier width
    "mobilenet_v3_large": ([
        (3, 16, 16, False, "RE", 1), (3, 64, 24, False, "RE", 2), (3, 72, 24, False, "RE", 1),
        (5, 72, 40, True, "RE", 2), (5, 120, 40, True, "RE", 1), (5, 120, 40, True, "RE", 1),
        (3, 240, 80, False, "HS", 2), (3, 200, 80, False, "HS", 1),
        (3, 184, 80, False, "HS", 1), (3, 184, 80, False, "HS", 1),
        (3, 480, 112, True, "HS", 1), (3, 672, 112, True, "HS", 1),
        (5, 672, 160, True, "HS", 2), (5, 960, 160, True, "HS", 1), (5, 960, 160, True, "HS", 1),
    ], 1280),
    "mobilenet_v3_small": ([
        (3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
        (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
        (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1),
        (5, 288, 96, True, "HS", 2), (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1),
    ], 1024),
}


def make_divisible(v, divisor=8):
    """torchvision's _make_divisible: v rounded to a multiple of divisor, never 10% below v."""
    rounded = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def conv_bn_act(net, p, cin, cout, k, stride=1, groups=1, act=None):
    """torchvision's Conv2dNormActivation: conv p.0 (no bias, padding (k-1)/2), BatchNorm p.1
    (MobileNetV3's eps 0.001), activation p.2 if any; returns the last layer's name."""
    net.conv(f"{p}.0", cin, cout, k, stride, (k - 1) // 2, groups, bias=False)
    out = net.layer(f"{p}.1", "batchnorm2d", num_features=cout, eps=0.001)
    return net.layer(f"{p}.2", act) if act else out


def squeeze_excite(net, p, channels, squeeze, gate="hardsigmoid"):
    """torchvision.ops.SqueezeExcitation: global average pool, 1x1 conv fc1, relu, 1x1 conv
    fc2, gate; the input's channels scaled by the result."""
    x = net.last
    net.layer(f"{p}.avgpool", "adaptive_avgpool2d", output_size=1)
    net.conv(f"{p}.fc1", channels, squeeze, 1)
    net.relu(f"{p}.activation")
    net.conv(f"{p}.fc2", squeeze, channels, 1)
    scale = net.layer(f"{p}.scale_activation", gate)
    return net.layer(f"{p}.mul", "mul", inputs=[x, scale])


def mobilenet_v3_block(net, p, cin, k, expanded, cout, se, act, stride):
    """Inverted residual: 1x1 expand (unless expanded == cin), kxk depthwise, SE, 1x1 project;
    the input is added where the shape is kept."""
    x = net.last
    act = "hardswish" if act == "HS" else "relu"
    index = 0
    if expanded != cin:
        conv_bn_act(net, f"{p}.block.0", cin, expanded, 1, act=act)
        index = 1
    conv_bn_act(net, f"{p}.block.{index}", expanded, expanded, k, stride, expanded, act)
    if se:
        index += 1
        squeeze_excite(net, f"{p}.block.{index}", expanded, make_divisible(expanded // 4))
    out = conv_bn_act(net, f"{p}.block.{index + 1}", expanded, cout, 1)
    if stride == 1 and cin == cout:
        net.layer(f"{p}.add", "add", inputs=[out, x])


def mobilenet_v3(name):
    blocks, last_channel = MOBILENET_V3[name]
    net = Net()
    net.comment("stem")
    conv_bn_act(net, "features.0", 3, 16, 3, 2, act="hardswish")
    channels = 16
    for i, (k, expanded, cout, se, act, stride) in enumerate(blocks, start=1):
        se_text = ", squeeze-excite" if se else ""
        net.comment(f"features.{i} (inverted residual, {k}x{k} depthwise, stride {stride}{se_text})")
        mobilenet_v3_block(net, f"features.{i}", channels, k, expanded, cout, se, act, stride)
        channels = cout
    net.comment("head")
    conv_bn_act(net, f"features.{len(blocks) + 1}", channels, 6 * channels, 1, act="hardswish")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.linear("classifier.0", 6 * channels, last_channel)
    net.layer("classifier.1", "hardswish")
    net.layer("classifier.2", "dropout", p=0.2)
    net.linear("classifier.3", last_channel, 1000)
    size = name[len("mobilenet_v3_"):].capitalize()
    return net, f"MobileNetV3-{size} (Howard et al. 2019), torchvision layout, ImageNet 1000 classes"


# ---------------------------------------------------------------------------------------------
# RegNet (Radosavovic et al. 2020): X (plain) and Y (squeeze-excite) bottleneck blocks with
# grouped 3x3 convolutions

REGNETS = {  # torchvision's BlockParams.from_init_params arguments: depth, w_0, w_a, w_m,
    # group width, squeeze-excite ratio (bottleneck multiplier 1, stride 2 per stage)
    "regnet_x_400mf": (22, 24, 24.48, 2.54, 16, None),
    "regnet_y_400mf": (16, 48, 27.89, 2.09, 8, 0.25),
    "regnet_y_1_6gf": (27, 48, 20.71, 2.65, 24, 0.25),
}


def regnet_stages(depth, w_0, w_a, w_m, group_width):
    """(width, depth, group width) per stage, as torchvision's BlockParams.from_init_params:
    block widths w_0 * w_m^round(log((i * w_a + w_0) / w_0) / log(w_m)) quantized to
    multiples of 8, consecutive equal widths forming a stage, then each stage's width made
    divisible by its group width (min(group_width, width))."""
    widths = []
    for i in range(depth):
        capacity = round(math.log((i * w_a + w_0) / w_0) / math.log(w_m))
        widths.append(int(round(w_0 * w_m ** capacity / 8)) * 8)
    stages = []
    for width in widths:
        if stages and stages[-1][0] == width:
            stages[-1][1] += 1
        else:
            stages.append([width, 1])
    return [(make_divisible(w, min(group_width, w)), d, min(group_width, w)) for w, d in stages]


def regnet_block(net, p, cin, cout, stride, group_width, se_ratio):
    """ResBottleneckBlock: f = 1x1 conv-bn-relu (f.a), grouped 3x3 conv-bn-relu (f.b, stride),
    squeeze-excite with relu and sigmoid (f.se, squeeze channels round(se_ratio * cin)),
    1x1 conv-bn (f.c); added to the input, or to its 1x1 conv-bn projection (proj) where the
    shape changes; relu after the add."""
    x = net.last
    conv_bn(net, f"{p}.f.a", 0, cin, cout, 1)
    net.relu(f"{p}.f.a.2")
    conv_bn(net, f"{p}.f.b", 0, cout, cout, 3, stride, 1, groups=cout // group_width)
    net.relu(f"{p}.f.b.2")
    if se_ratio:
        squeeze_excite(net, f"{p}.f.se", cout, int(round(se_ratio * cin)), gate="sigmoid")
    out = conv_bn(net, f"{p}.f.c", 0, cout, cout, 1)
    shortcut = x
    if stride != 1 or cin != cout:
        shortcut = conv_bn(net, f"{p}.proj", 0, cin, cout, 1, stride, input=x)
    net.layer(f"{p}.add", "add", inputs=[shortcut, out])
    net.relu(f"{p}.activation")


def regnet(name):
    depth, w_0, w_a, w_m, group_width, se_ratio = REGNETS[name]
    net = Net()
    net.comment("stem")
    conv_bn(net, "stem", 0, 3, 32, 3, 2, 1)
    net.relu("stem.2")
    channels = 32
    stages = regnet_stages(depth, w_0, w_a, w_m, group_width)
    for stage, (width, count, gw) in enumerate(stages, start=1):
        for i in range(count):
            stride = 2 if i == 0 else 1
            p = f"trunk_output.block{stage}.block{stage}-{i}"
            se_text = ", squeeze-excite" if se_ratio else ""
            net.comment(f"{p} (bottleneck, {width // gw} groups of {gw}, stride {stride}"
                        f"{se_text})")
            regnet_block(net, p, channels, width, stride, gw, se_ratio)
            channels = width
    net.comment("head")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.linear("fc", channels, 1000)
    _, kind, flops = name.split("_", 2)  # regnet_y_1_6gf: RegNetY-1.6GF
    flops = flops.replace("_", ".").upper()
    return net, (f"RegNet{kind.upper()}-{flops} (Radosavovic et al. 2020), torchvision layout, "
                 "ImageNet 1000 classes")


# ---------------------------------------------------------------------------------------------
# EfficientNet (Tan and Le 2019): MBConv blocks with squeeze-and-excitation, SiLU

EFFICIENTNETS = {  # width multiplier, depth multiplier, torchvision's weights' preprocess
    "efficientnet_b0": (1.0, 1.0, "resize 256 / crop 224 bicubic"),
    "efficientnet_b1": (1.0, 1.1, "resize 255 / crop 240 bilinear (V1 256 / 240 bicubic)"),
}
EFFICIENTNET_STAGES = [  # (expansion, kernel, stride of the first, in, out, repeats): features.1-7
    (1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1),
]


def conv_bn_silu(net, p, cin, cout, k, stride=1, groups=1, act="silu"):
    """EfficientNet's Conv2dNormActivation: conv p.0 (no bias, padding (k-1)/2), BatchNorm p.1
    (torchvision's default eps 1e-5 for B0-B7), SiLU p.2 unless act is None."""
    out = conv_bn(net, p, 0, cin, cout, k, stride, (k - 1) // 2, groups)
    return net.layer(f"{p}.2", act) if act else out


def squeeze_excite_silu(net, p, channels, squeeze):
    """torchvision.ops.SqueezeExcitation(activation=SiLU): global average pool, 1x1 conv fc1,
    SiLU, 1x1 conv fc2, sigmoid; the input's channels scaled by the result."""
    x = net.last
    net.layer(f"{p}.avgpool", "adaptive_avgpool2d", output_size=1)
    net.conv(f"{p}.fc1", channels, squeeze, 1)
    net.layer(f"{p}.activation", "silu")
    net.conv(f"{p}.fc2", squeeze, channels, 1)
    scale = net.layer(f"{p}.scale_activation", "sigmoid")
    return net.layer(f"{p}.mul", "mul", inputs=[x, scale])


def mbconv_block(net, p, cin, cout, k, stride, expansion):
    """MBConv: 1x1 expand (unless expansion 1), kxk depthwise, squeeze-excite to cin / 4
    channels, 1x1 linear projection; the input is added where the shape is kept (torchvision's
    StochasticDepth before the add is the identity in eval mode, so it has no layer here)."""
    x, hidden, index = net.last, make_divisible(cin * expansion), 0
    if hidden != cin:
        conv_bn_silu(net, f"{p}.block.0", cin, hidden, 1)
        index = 1
    conv_bn_silu(net, f"{p}.block.{index}", hidden, hidden, k, stride, hidden)
    squeeze_excite_silu(net, f"{p}.block.{index + 1}", hidden, max(1, cin // 4))
    out = conv_bn_silu(net, f"{p}.block.{index + 2}", hidden, cout, 1, act=None)
    if stride == 1 and cin == cout:
        net.layer(f"{p}.add", "add", inputs=[out, x])


def efficientnet(name):
    width, depth, weights_preprocess = EFFICIENTNETS[name]
    net = Net()
    net.comment("stem")
    stem = make_divisible(EFFICIENTNET_STAGES[0][3] * width)
    conv_bn_silu(net, "features.0", 3, stem, 3, 2)
    channels = stem
    for stage, (expansion, k, first_stride, _, cout, repeats) in enumerate(EFFICIENTNET_STAGES, 1):
        cout = make_divisible(cout * width)
        for i in range(math.ceil(repeats * depth)):
            stride = first_stride if i == 0 else 1
            net.comment(f"features.{stage}.{i} (MBConv, expansion {expansion}, {k}x{k} depthwise, "
                        f"stride {stride}, squeeze-excite)")
            mbconv_block(net, f"features.{stage}.{i}", channels, cout, k, stride, expansion)
            channels = cout
    net.comment("head")
    head = 4 * channels
    conv_bn_silu(net, f"features.{len(EFFICIENTNET_STAGES) + 1}", channels, head, 1)
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.layer("classifier.0", "dropout", p=0.2)
    net.linear("classifier.1", head, 1000)
    variant = name[len("efficientnet_"):].upper()
    return net, (f"EfficientNet-{variant} (Tan and Le 2019), torchvision layout, ImageNet 1000 "
                 f"classes (torchvision's weights were evaluated at {weights_preprocess}; this "
                 f"file keeps the zoo's resize 256 / crop 224)")


# ---------------------------------------------------------------------------------------------
# AlexNet (Krizhevsky et al. 2012; torchvision's one-GPU variant of Krizhevsky 2014)

ALEXNET_FEATURES = [  # ("conv", channels, kernel, stride, padding) or "M" (3x3/2 max pool)
    ("conv", 64, 11, 4, 2), "M", ("conv", 192, 5, 1, 2), "M", ("conv", 384, 3, 1, 1),
    ("conv", 256, 3, 1, 1), ("conv", 256, 3, 1, 1), "M",
]


def alexnet(name):
    net = Net()
    net.comment("features (nn.Sequential: 11x11 stride-4 conv, 5x5 conv, three 3x3 convs)")
    index, channels = 0, 3
    for item in ALEXNET_FEATURES:
        if item == "M":
            net.layer(f"features.{index}", "maxpool2d", kernel_size=3, stride=2)
            index += 1
            continue
        _, cout, k, stride, padding = item
        net.conv(f"features.{index}", channels, cout, k, stride, padding)
        net.relu(f"features.{index + 1}")
        index, channels = index + 2, cout
    net.comment("classifier (the adaptive pool repeats or averages cells into 6x6 at other sizes)")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=6)
    net.layer("flatten", "flatten")
    net.layer("classifier.0", "dropout")
    net.linear("classifier.1", channels * 6 * 6, 4096)
    net.relu("classifier.2")
    net.layer("classifier.3", "dropout")
    net.linear("classifier.4", 4096, 4096)
    net.relu("classifier.5")
    net.linear("classifier.6", 4096, 1000)
    return net, ("AlexNet (Krizhevsky 2014 one-GPU variant), torchvision layout, ImageNet 1000 "
                 "classes")


# ---------------------------------------------------------------------------------------------
# GoogLeNet (Szegedy et al. 2014) and Inception v3 (Szegedy et al. 2015). Both use torchvision's
# BasicConv2d: conv (no bias) p.conv, BatchNorm p.bn with eps 1e-3, relu (functional, no module).
# Built as torchvision builds them without weights (export_torch.py's torchvision_model passes
# the same): aux_logits=False (the auxiliary classifiers run only in training; their parameters
# are not part of the inference network), transform_input=False (the input is normalised by the
# preprocessing, as for every zoo model; torchvision's pretrained weights set it True to rescale
# an ImageNet-normalised input into the [-1, 1] range they were trained on).


def basic_conv(net, p, cin, cout, k, stride=1, padding=0, input=None):
    net.conv(f"{p}.conv", cin, cout, k, stride, padding, bias=False, input=input)
    net.bn(f"{p}.bn", cout, eps=0.001)
    return net.relu(f"{p}.relu")


GOOGLENET_BLOCKS = [  # name, in, 1x1, 3x3 reduce, 3x3, "5x5" reduce, "5x5" (a 3x3), pool proj;
    # "M" / "M2": the 3x3/2 or 2x2/2 max pool (ceil_mode) of that name
    ("inception3a", 192, 64, 96, 128, 16, 32, 32),
    ("inception3b", 256, 128, 128, 192, 32, 96, 64), ("maxpool3", "M"),
    ("inception4a", 480, 192, 96, 208, 16, 48, 64),
    ("inception4b", 512, 160, 112, 224, 24, 64, 64),
    ("inception4c", 512, 128, 128, 256, 24, 64, 64),
    ("inception4d", 512, 112, 144, 288, 32, 64, 64),
    ("inception4e", 528, 256, 160, 320, 32, 128, 128), ("maxpool4", "M2"),
    ("inception5a", 832, 256, 160, 320, 32, 128, 128),
    ("inception5b", 832, 384, 192, 384, 48, 128, 128),
]


def googlenet_inception(net, p, cin, c1, c3r, c3, c5r, c5, pool_proj):
    """Four branches concatenated: 1x1; 1x1 then 3x3; 1x1 then 3x3 (torchvision's 5x5 branch
    has a 3x3 kernel, vision issue 906); 3x3/1 max pool (ceil_mode) then 1x1."""
    x = net.last
    b1 = basic_conv(net, f"{p}.branch1", cin, c1, 1, input=x)
    basic_conv(net, f"{p}.branch2.0", cin, c3r, 1, input=x)
    b2 = basic_conv(net, f"{p}.branch2.1", c3r, c3, 3, padding=1)
    basic_conv(net, f"{p}.branch3.0", cin, c5r, 1, input=x)
    b3 = basic_conv(net, f"{p}.branch3.1", c5r, c5, 3, padding=1)
    net.layer(f"{p}.branch4.0", "maxpool2d", input=x, kernel_size=3, stride=1, padding=1,
              ceil_mode=True)
    b4 = basic_conv(net, f"{p}.branch4.1", cin, pool_proj, 1)
    net.layer(f"{p}.concat", "concat", inputs=[b1, b2, b3, b4])
    return c1 + c3 + c5 + pool_proj


def googlenet(name):
    net = Net()
    net.comment("stem (max pools with ceil_mode, as every GoogLeNet max pool)")
    basic_conv(net, "conv1", 3, 64, 7, 2, 3)
    net.layer("maxpool1", "maxpool2d", kernel_size=3, stride=2, ceil_mode=True)
    basic_conv(net, "conv2", 64, 64, 1)
    basic_conv(net, "conv3", 64, 192, 3, padding=1)
    net.layer("maxpool2", "maxpool2d", kernel_size=3, stride=2, ceil_mode=True)
    channels = 192
    for row in GOOGLENET_BLOCKS:
        if row[1] in ("M", "M2"):
            k = 3 if row[1] == "M" else 2
            net.layer(row[0], "maxpool2d", kernel_size=k, stride=2, ceil_mode=True)
            continue
        net.comment(f"{row[0]} (four branches, concatenated)")
        channels = googlenet_inception(net, row[0], *row[1:])
    net.comment("head")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.layer("dropout", "dropout", p=0.2)
    net.linear("fc", channels, 1000)
    return net, ("GoogLeNet (Szegedy et al. 2014), torchvision layout without the auxiliary "
                 "classifiers, ImageNet 1000 classes")


def inception_a(net, p, cin, pool_features):
    x = net.last
    b1 = basic_conv(net, f"{p}.branch1x1", cin, 64, 1, input=x)
    basic_conv(net, f"{p}.branch5x5_1", cin, 48, 1, input=x)
    b5 = basic_conv(net, f"{p}.branch5x5_2", 48, 64, 5, padding=2)
    basic_conv(net, f"{p}.branch3x3dbl_1", cin, 64, 1, input=x)
    basic_conv(net, f"{p}.branch3x3dbl_2", 64, 96, 3, padding=1)
    b3 = basic_conv(net, f"{p}.branch3x3dbl_3", 96, 96, 3, padding=1)
    bp = inception_pool_branch(net, p, x, cin, pool_features)
    net.layer(f"{p}.concat", "concat", inputs=[b1, b5, b3, bp])
    return 64 + 64 + 96 + pool_features


def inception_pool_branch(net, p, x, cin, cout):
    """F.avg_pool2d(3, stride 1, padding 1) (count_include_pad: the border cells divide by 9,
    PyTorch's default), then the 1x1 BasicConv2d branch_pool."""
    net.layer(f"{p}.avg_pool", "avgpool2d", input=x, kernel_size=3, stride=1, padding=1)
    return basic_conv(net, f"{p}.branch_pool", cin, cout, 1)


def inception_b(net, p, cin):
    x = net.last
    b3 = basic_conv(net, f"{p}.branch3x3", cin, 384, 3, 2, input=x)
    basic_conv(net, f"{p}.branch3x3dbl_1", cin, 64, 1, input=x)
    basic_conv(net, f"{p}.branch3x3dbl_2", 64, 96, 3, padding=1)
    bd = basic_conv(net, f"{p}.branch3x3dbl_3", 96, 96, 3, 2)
    bp = net.layer(f"{p}.max_pool", "maxpool2d", input=x, kernel_size=3, stride=2)
    net.layer(f"{p}.concat", "concat", inputs=[b3, bd, bp])
    return 384 + 96 + cin


def inception_c(net, p, cin, c7):
    """1x7 and 7x1 convolutions (kernel [1, 7] with padding [0, 3], and [7, 1] with [3, 0])."""
    x = net.last
    b1 = basic_conv(net, f"{p}.branch1x1", cin, 192, 1, input=x)
    basic_conv(net, f"{p}.branch7x7_1", cin, c7, 1, input=x)
    basic_conv(net, f"{p}.branch7x7_2", c7, c7, [1, 7], padding=[0, 3])
    b7 = basic_conv(net, f"{p}.branch7x7_3", c7, 192, [7, 1], padding=[3, 0])
    basic_conv(net, f"{p}.branch7x7dbl_1", cin, c7, 1, input=x)
    basic_conv(net, f"{p}.branch7x7dbl_2", c7, c7, [7, 1], padding=[3, 0])
    basic_conv(net, f"{p}.branch7x7dbl_3", c7, c7, [1, 7], padding=[0, 3])
    basic_conv(net, f"{p}.branch7x7dbl_4", c7, c7, [7, 1], padding=[3, 0])
    bd = basic_conv(net, f"{p}.branch7x7dbl_5", c7, 192, [1, 7], padding=[0, 3])
    bp = inception_pool_branch(net, p, x, cin, 192)
    net.layer(f"{p}.concat", "concat", inputs=[b1, b7, bd, bp])
    return 4 * 192


def inception_d(net, p, cin):
    x = net.last
    basic_conv(net, f"{p}.branch3x3_1", cin, 192, 1, input=x)
    b3 = basic_conv(net, f"{p}.branch3x3_2", 192, 320, 3, 2)
    basic_conv(net, f"{p}.branch7x7x3_1", cin, 192, 1, input=x)
    basic_conv(net, f"{p}.branch7x7x3_2", 192, 192, [1, 7], padding=[0, 3])
    basic_conv(net, f"{p}.branch7x7x3_3", 192, 192, [7, 1], padding=[3, 0])
    b7 = basic_conv(net, f"{p}.branch7x7x3_4", 192, 192, 3, 2)
    bp = net.layer(f"{p}.max_pool", "maxpool2d", input=x, kernel_size=3, stride=2)
    net.layer(f"{p}.concat", "concat", inputs=[b3, b7, bp])
    return 320 + 192 + cin


def inception_e(net, p, cin):
    """Branches that split in two (1x3 and 3x1 side by side): six tensors concatenated, as
    torchvision's inner and outer torch.cat give the same channel order."""
    x = net.last
    b1 = basic_conv(net, f"{p}.branch1x1", cin, 320, 1, input=x)
    y = basic_conv(net, f"{p}.branch3x3_1", cin, 384, 1, input=x)
    b3a = basic_conv(net, f"{p}.branch3x3_2a", 384, 384, [1, 3], padding=[0, 1])
    b3b = basic_conv(net, f"{p}.branch3x3_2b", 384, 384, [3, 1], padding=[1, 0], input=y)
    basic_conv(net, f"{p}.branch3x3dbl_1", cin, 448, 1, input=x)
    y = basic_conv(net, f"{p}.branch3x3dbl_2", 448, 384, 3, padding=1)
    bda = basic_conv(net, f"{p}.branch3x3dbl_3a", 384, 384, [1, 3], padding=[0, 1])
    bdb = basic_conv(net, f"{p}.branch3x3dbl_3b", 384, 384, [3, 1], padding=[1, 0], input=y)
    bp = inception_pool_branch(net, p, x, cin, 192)
    net.layer(f"{p}.concat", "concat", inputs=[b1, b3a, b3b, bda, bdb, bp])
    return 320 + 4 * 384 + 192


INCEPTION_V3_BLOCKS = [  # (module, kind, argument): Mixed_5b ... Mixed_7c
    ("Mixed_5b", inception_a, 32), ("Mixed_5c", inception_a, 64), ("Mixed_5d", inception_a, 64),
    ("Mixed_6a", inception_b, None), ("Mixed_6b", inception_c, 128),
    ("Mixed_6c", inception_c, 160), ("Mixed_6d", inception_c, 160),
    ("Mixed_6e", inception_c, 192), ("Mixed_7a", inception_d, None),
    ("Mixed_7b", inception_e, None), ("Mixed_7c", inception_e, None),
]


def inception_v3(name):
    net = Net()
    net.comment("stem (unpadded 3x3 convs and max pools)")
    basic_conv(net, "Conv2d_1a_3x3", 3, 32, 3, 2)
    basic_conv(net, "Conv2d_2a_3x3", 32, 32, 3)
    basic_conv(net, "Conv2d_2b_3x3", 32, 64, 3, padding=1)
    net.layer("maxpool1", "maxpool2d", kernel_size=3, stride=2)
    basic_conv(net, "Conv2d_3b_1x1", 64, 80, 1)
    basic_conv(net, "Conv2d_4a_3x3", 80, 192, 3)
    net.layer("maxpool2", "maxpool2d", kernel_size=3, stride=2)
    channels = 192
    for module, kind, argument in INCEPTION_V3_BLOCKS:
        letter = kind.__name__[-1].upper()
        net.comment(f"{module} (Inception{letter})")
        extra = [] if argument is None else [argument]
        channels = kind(net, module, channels, *extra)
    net.comment("head")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("dropout", "dropout")
    net.layer("flatten", "flatten")
    net.linear("fc", channels, 1000)
    return net, ("Inception v3 (Szegedy et al. 2015), torchvision layout without the auxiliary "
                 "classifier, ImageNet 1000 classes, 299x299")


# ---------------------------------------------------------------------------------------------
# DenseNet (Huang et al. 2016), DenseNet-BC: pre-activation BN-ReLU-conv layers, each reading
# the concatenation of every earlier output of its block

DENSENETS = {"densenet121": (32, [6, 12, 24, 16], 64)}  # growth rate, layers per block, stem
DENSENET_BN_SIZE = 4


def densenet(name):
    growth, blocks, stem = DENSENETS[name]
    net = Net()
    net.comment("stem")
    net.conv("features.conv0", 3, stem, 7, 2, 3, bias=False)
    net.bn("features.norm0", stem)
    net.relu("features.relu0")
    x = net.layer("features.pool0", "maxpool2d", kernel_size=3, stride=2, padding=1)
    channels = stem
    for b, count in enumerate(blocks, start=1):
        p = f"features.denseblock{b}"
        features = [x]
        for i in range(1, count + 1):
            q = f"{p}.denselayer{i}"
            net.comment(f"{q} (BN-ReLU-1x1 conv, BN-ReLU-3x3 conv on the concat of "
                        f"{len(features)} tensors)")
            x = features[0] if len(features) == 1 else net.layer(f"{q}.concat", "concat",
                                                                  inputs=features)
            cin = channels + (i - 1) * growth
            net.bn(f"{q}.norm1", cin, input=x)
            net.relu(f"{q}.relu1")
            net.conv(f"{q}.conv1", cin, DENSENET_BN_SIZE * growth, 1, bias=False)
            net.bn(f"{q}.norm2", DENSENET_BN_SIZE * growth)
            net.relu(f"{q}.relu2")
            features.append(net.conv(f"{q}.conv2", DENSENET_BN_SIZE * growth, growth, 3,
                                     padding=1, bias=False))
        x = net.layer(f"{p}.concat", "concat", inputs=features)
        channels += count * growth
        if b < len(blocks):
            t = f"features.transition{b}"
            net.comment(f"{t} (BN-ReLU-1x1 conv halving the channels, 2x2 average pool)")
            net.bn(f"{t}.norm", channels)
            net.relu(f"{t}.relu")
            net.conv(f"{t}.conv", channels, channels // 2, 1, bias=False)
            x = net.layer(f"{t}.pool", "avgpool2d", kernel_size=2, stride=2)
            channels //= 2
    net.comment("head")
    net.bn("features.norm5", channels)
    net.relu("relu")
    net.layer("avgpool", "adaptive_avgpool2d", output_size=1)
    net.layer("flatten", "flatten")
    net.linear("classifier", channels, 1000)
    depth = name[len("densenet"):]
    return net, f"DenseNet-{depth} (Huang et al. 2016), torchvision layout, ImageNet 1000 classes"


# ---------------------------------------------------------------------------------------------
# Writing YAML


def build(name):
    if name == "alexnet":
        return alexnet(name)
    if name == "googlenet":
        return googlenet(name)
    if name == "inception_v3":
        return inception_v3(name)
    if name in DENSENETS:
        return densenet(name)
    if name in RESNEXTS:
        return resnet(name)
    if name in REGNETS:
        return regnet(name)
    if name in SQUEEZENETS:
        return squeezenet(name)
    if name == "mobilenet_v2":
        return mobilenet_v2(name)
    if name in MNASNETS:
        return mnasnet(name)
    if name in RESNETS:
        return resnet(name)
    if name in SHUFFLENETS:
        return shufflenet(name)
    if name.replace("_bn", "") in VGG_CONFIGS:
        return vgg(name)
    if name in MOBILENET_V3:
        return mobilenet_v3(name)
    if name in EFFICIENTNETS:
        return efficientnet(name)
    raise KeyError(name)


MODELS = (list(RESNETS) + [v + s for s in ("", "_bn") for v in VGG_CONFIGS] + list(SHUFFLENETS)
          + list(MOBILENET_V3) + list(SQUEEZENETS) + ["mobilenet_v2"] + list(MNASNETS))
MODELS += list(EFFICIENTNETS)
MODELS += list(REGNETS)
MODELS += ["alexnet", "googlenet", "inception_v3"] + list(DENSENETS) + list(RESNEXTS)


def scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    text = str(value)
    # quote anything a YAML reader could take for syntax (e.g. "stage2.1.split:1")
    if any(c in text for c in ":#,[]{}&*!|>'\"%@`") or text in ("true", "false", "null", ""):
        return "'" + text.replace("'", "''") + "'"
    return text


def flow(entry):
    return "{" + ", ".join(f"{k}: {scalar(v)}" for k, v in entry.items()) + "}"


# Models whose torchvision weights take another input size than 224 (resize, crop): the YAML's
# input shape and preprocessing follow torchvision's weights' transforms.
INPUT_SIZES = {"inception_v3": (342, 299)}
# GoogLeNet's and Inception v3's torchvision weights were ported from Google's and run with
# transform_input=True, which turns the ImageNet-normalised input into (pixel - 0.5) / 0.5; the
# zoo network has no such step (transform_input=False), so its preprocessing does it.
HALF_NORMALISED = ("googlenet", "inception_v3")


def render(name):
    """The complete YAML text of one zoo model."""
    net, description = build(name)
    resize, crop = INPUT_SIZES.get(name, (256, 224))
    preprocess = [("resize", resize), ("crop", crop)] + IMAGENET_PREPROCESS[2:]
    if name in HALF_NORMALISED:
        preprocess[2:4] = [("mean", [0.5, 0.5, 0.5]), ("std", [0.5, 0.5, 0.5])]
    lines = [
        f"# Generated by models/tools/gen_zoo.py from its description of the network; do not",
        f"# edit by hand. Regenerate: {COMMAND} {name}",
        f"# Layer names are torchvision's module paths, so parameters are its state_dict() keys.",
        f"format: winfer/1",
        f"name: {name}",
        f"description: {description}",
        f"input: {{name: input, shape: [1, 3, {crop}, {crop}]}}",
        f"labels: ../labels/imagenet.txt",
        f"preprocess:",
    ]
    lines += [f"  {key}: {scalar(value)}" for key, value in preprocess]
    lines += [f"outputs: [{net.last}]", "layers:"]
    for kind, row in net.rows:
        lines.append(f"  # {row}" if kind == "comment" else f"  - {flow(row)}")
    return "\n".join(lines) + "\n"


def check(names, directory):
    stale = []
    for name in names:
        path = os.path.join(directory, f"{name}.yaml")
        current = open(path).read() if os.path.exists(path) else None
        if current != render(name):
            stale.append(path if current is not None else f"{path} (missing)")
    for path in stale:
        print(f"gen_zoo --check: out of date: {path}", file=sys.stderr)
    if stale:
        print(f"gen_zoo --check: regenerate with: {COMMAND}", file=sys.stderr)
    return 1 if stale else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="Generate the winfer model zoo YAML files.")
    ap.add_argument("models", nargs="*", help=f"models to write (default: all): {MODELS}")
    ap.add_argument("--check", action="store_true",
                    help="compare the files with a fresh generation; exit 1 on any difference")
    ap.add_argument("--out-dir", default=ZOO_DIR, help="folder of the YAML files")
    args = ap.parse_args(argv)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {MODELS}")
    names = args.models or MODELS
    if args.check:
        return check(names, args.out_dir)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in names:
        path = os.path.join(args.out_dir, f"{name}.yaml")
        with open(path, "w") as f:
            f.write(render(name))
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
