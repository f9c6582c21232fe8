#!/usr/bin/python3
"""Train the Fashion-MNIST models of models/fashion/ and export them for winfer.

    /usr/bin/python3 models/fashion/train.py                 # train and export all three
    /usr/bin/python3 models/fashion/train.py resnet --epochs 4
    /usr/bin/python3 models/fashion/train.py --yaml-only     # rewrite the YAML files only
    /usr/bin/python3 models/fashion/train.py --examples      # rewrite examples/*.png only

Runs on the CPU with 2 threads (the build machine is shared) and a fixed seed. Reads the IDX
files of Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist, or --data).

For each model NAME it writes into models/fashion/:
    fashion_NAME.yaml               the winfer description (nets.py: render_yaml)
    fashion_NAME.safetensors        the trained weights, float32 (state_dict keys)
    fashion_NAME.test_predictions   10,000 bytes: PyTorch's predicted class of each test image,
                                    in file order; the engine's eval test compares with them
and updates results.json (accuracy, size, training time, command, torch version). Every
exported YAML is run through models/tools/yaml_reference.py on the whole test split and must
reproduce the module's predictions.
"""

import argparse
import gzip
import hashlib
import json
import os
import sys
import time

import numpy as np

# OpenMP threads that spin while they wait make training several times slower when the cores are
# shared (measured 8x with other jobs compiling); passive waiting must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.normpath(os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
sys.path.insert(0, TOOLS)
import nets  # noqa: E402
import yaml_reference  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
DEFAULT_EPOCHS = {"resnet": 8, "vgg": 6, "shufflenet": 8}
BATCH = 128
THREADS = 2

# ---------------------------------------------------------------------------------------------
# Data


def read_idx(path, magic, dims):
    """An IDX file (gzip) as a uint8 array; `magic` 0x801 = labels, 0x803 = images."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    header = np.frombuffer(raw[:4 + 4 * dims], dtype=">u4")
    if header[0] != magic:
        raise SystemExit(f"{path}: magic {header[0]:#x}, expected {magic:#x}")
    shape = [int(d) for d in header[1:]]
    return np.frombuffer(raw[4 + 4 * dims:], dtype=np.uint8).reshape(shape)


def load_split(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), 0x803, 3)
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), 0x801, 1)
    return images, labels


def normalize(images_u8):
    """uint8 [N, 28, 28] -> float32 [N, 1, 28, 28], as the engine computes it: p / 255, then
    (x - mean) / std, each step in float32 (torchvision's ToTensor + Normalize)."""
    x = torch.from_numpy(images_u8.copy()).to(torch.float32).div(255.0).unsqueeze(1)
    return (x - torch.tensor(nets.MEAN, dtype=torch.float32)) / torch.tensor(nets.STD, dtype=torch.float32)


# ---------------------------------------------------------------------------------------------
# Training


def augment(x, generator):
    """Random horizontal flips (clothes are left-right symmetric enough). Shifts were tried and
    left the models under-fitted in the few epochs the shared CPU allows (ResNet 90.8%)."""
    flip = torch.rand(x.shape[0], generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], x.flip(3), x)


def train(model, x, y, epochs, seed):
    generator = torch.Generator().manual_seed(seed)
    steps = epochs * ((len(x) + BATCH - 1) // BATCH)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps,
                                                   pct_start=0.25)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x), generator=generator)
        start, total_loss = time.time(), 0.0
        for i in range(0, len(x), BATCH):
            index = order[i:i + BATCH]
            loss = F.cross_entropy(model(augment(x[index], generator)), y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            total_loss += float(loss) * len(index)
        print(f"  epoch {epoch + 1}/{epochs}: loss {total_loss / len(x):.4f} "
              f"({time.time() - start:.0f} s)", flush=True)


def predict(run, x):
    """Argmax class of every row, computed in batches of 1000."""
    with torch.no_grad():
        return torch.cat([run(x[i:i + 1000]).argmax(1) for i in range(0, len(x), 1000)])


# ---------------------------------------------------------------------------------------------
# Export


def float_state_dict(model):
    """The state_dict entries winfer reads (BatchNorm's integer counters are left out)."""
    return {k: v.detach().to(torch.float32).numpy() for k, v in model.state_dict().items()
            if v.is_floating_point()}


def export(name, model, x_test, y_test, train_seconds, epochs, out_dir):
    stem = nets.model_stem(name)
    yaml_path = os.path.join(out_dir, f"{stem}.yaml")
    weights_path = os.path.join(out_dir, f"{stem}.safetensors")
    with open(yaml_path, "w") as f:
        f.write(nets.render_yaml(name))
    write_safetensors(weights_path, float_state_dict(model))

    model.eval()
    predictions = predict(model, x_test).to(torch.uint8).numpy()
    with open(os.path.join(out_dir, f"{stem}.test_predictions"), "wb") as f:
        f.write(predictions.tobytes())
    correct = int((predictions == y_test).sum())

    # The YAML (as winfer reads it, with the exported weights) must reproduce the module.
    reference = yaml_reference.load_model(yaml_path)
    output_name = reference.outputs[0]
    reference_predictions = predict(lambda b: reference.run(b)[output_name], x_test).numpy()
    differing = int((reference_predictions != predictions).sum())
    with torch.no_grad():
        max_diff = float((reference.run(x_test[:256])[output_name] - model(x_test[:256])).abs().max())
    print(f"  yaml_reference: max |logit diff| {max_diff:.2e} on 256 images, "
          f"{differing} of {len(x_test)} predictions differ", flush=True)
    if differing or max_diff > 1e-3:
        raise SystemExit(f"{yaml_path} does not reproduce the PyTorch module")

    return {
        "yaml": os.path.basename(yaml_path),
        "test_accuracy": correct / len(y_test),
        "test_correct": correct,
        "test_images": len(y_test),
        "predictions_sha256": hashlib.sha256(predictions.tobytes()).hexdigest(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "weights_bytes": os.path.getsize(weights_path),
        "epochs": epochs,
        "train_seconds": round(train_seconds, 1),
        "yaml_reference_max_logit_diff": max_diff,
    }


def example_name(label):
    """'T-shirt/top' -> 'tshirt_top', 'Ankle boot' -> 'ankle_boot'."""
    return label.lower().replace("/", "_").replace(" ", "_").replace("-", "")


def write_examples(images, labels, out_dir):
    """One test image per class (the first of each in file order) as an 8-bit gray PNG named
    after the class, and examples.tsv: file, index in the test split, true label. The index
    lets tests look up PyTorch's prediction for the image in fashion_*.test_predictions."""
    from PIL import Image
    os.makedirs(out_dir, exist_ok=True)
    rows = ["# file\ttest_index\tlabel (written by models/fashion/train.py --examples)"]
    for c, label in enumerate(nets.LABELS):
        index = int(np.flatnonzero(labels == c)[0])
        name = f"{example_name(label)}.png"
        Image.fromarray(images[index], mode="L").save(os.path.join(out_dir, name))
        rows.append(f"{name}\t{index}\t{label}")
        print(f"wrote {os.path.relpath(os.path.join(out_dir, name))} (test image {index})")
    with open(os.path.join(out_dir, "examples.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")


def update_results(path, name, entry):
    results = {}
    if os.path.exists(path):
        with open(path) as f:
            results = json.load(f)
    results[name] = entry
    with open(path, "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help=f"models to train (default: all): {list(nets.MODELS)}")
    ap.add_argument("--epochs", type=int, help=f"epochs (default per model: {DEFAULT_EPOCHS})")
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder of the IDX .gz files")
    ap.add_argument("--out-dir", default=HERE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--yaml-only", action="store_true", help="write the YAML files and stop")
    ap.add_argument("--examples", action="store_true", help="write examples/*.png and stop")
    args = ap.parse_args(argv)
    names = args.models or list(nets.MODELS)
    unknown = [n for n in names if n not in nets.MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}")
    torch.set_num_threads(THREADS)

    if args.yaml_only:
        for name in names:
            with open(os.path.join(args.out_dir, f"{nets.model_stem(name)}.yaml"), "w") as f:
                f.write(nets.render_yaml(name))
        return 0
    test_images, test_labels = load_split(args.data, "test")
    if args.examples:
        write_examples(test_images, test_labels, os.path.join(args.out_dir, "examples"))
        return 0

    train_images, train_labels = load_split(args.data, "train")
    x_train, y_train = normalize(train_images), torch.from_numpy(train_labels.astype(np.int64))
    x_test = normalize(test_images)
    with open(os.path.join(args.out_dir, "labels.txt"), "w") as f:
        f.write("\n".join(nets.LABELS) + "\n")
    for name in names:
        epochs = args.epochs or DEFAULT_EPOCHS[name]
        torch.manual_seed(args.seed)
        model = nets.build_module(name)
        print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters, {epochs} epochs",
              flush=True)
        start = time.time()
        train(model, x_train, y_train, epochs, args.seed)
        seconds = time.time() - start
        entry = export(name, model, x_test, test_labels, seconds, epochs, args.out_dir)
        entry["command"] = ("/usr/bin/python3 models/fashion/train.py " + name +
                            (f" --epochs {epochs}" if args.epochs else "") +
                            (f" --seed {args.seed}" if args.seed else ""))
        entry["seed"] = args.seed
        entry["torch"] = torch.__version__
        entry["threads"] = THREADS
        update_results(os.path.join(args.out_dir, "results.json"), name, entry)
        print(f"{name}: test accuracy {entry['test_accuracy']:.4f}, {seconds:.0f} s, "
              f"{entry['weights_bytes']} bytes of weights", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
