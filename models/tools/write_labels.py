#!/usr/bin/python3
"""Write models/labels/imagenet.txt: the 1000 ImageNet-1k class names in torchvision's order
(the order of the classifier's outputs), one per line.

torchvision ships the names in its weights metadata, so nothing is downloaded.

Usage: /usr/bin/python3 models/tools/write_labels.py [-o models/labels/imagenet.txt]
"""

import argparse
import os

import torchvision

TOOLS = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.normpath(os.path.join(TOOLS, "..", "labels", "imagenet.txt"))


def imagenet_categories():
    categories = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["categories"]
    if len(categories) != 1000 or any("\n" in c for c in categories):
        raise SystemExit("unexpected category list in torchvision's metadata")
    return categories


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=DEFAULT)
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        f.write("\n".join(imagenet_categories()) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
