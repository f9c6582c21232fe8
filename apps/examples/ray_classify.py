#!/usr/bin/env python3
"""Classify a folder (or a list of image files / URIs) with winfer on a Ray cluster.

    pip install . "ray[data]"                    # winfer's package and Ray (Ray is not a dependency)
    python apps/examples/ray_classify.py models/fashion/fashion_resnet.yaml IMAGES/ -o out/ \
        --workers 2 --threads 1

Ray Data reads and decodes the images (``read_images``), hands them in batches to ``--workers``
actors, each of which holds ONE winfer model and session for its whole life (made in
``__init__``, reused for every batch: loading and planning happen once per worker, not per
batch), and writes one row per image -- path, top-1 label, class index, probability -- as CSV or
Parquet files into the ``-o`` folder (Ray writes one file per block; read them back as a
folder).

The same script runs on a laptop and on a cluster: without ``RAY_ADDRESS`` it starts a local Ray
with ``--workers x --threads`` CPUs; with ``RAY_ADDRESS=ray://head:10001`` (or ``auto`` on a
cluster node) it joins that cluster. On a cluster the model file (and its weights and labels)
must be readable at the same path on every node, and the images and the output folder must be
shared storage or URIs every node reads (``s3://...``, ``gs://...``); docs/SCALE_OUT.md says
more, including how to choose workers and threads.

Images are decoded by Pillow (Ray's reader) in the colour mode the model wants (``L`` for a
1-channel input, ``RGB`` otherwise), then resized, cropped and normalized by winfer's own
preprocessing, so PNG (lossless) images give exactly ``winfer classify``'s predictions; JPEG
decoders differ by a grey level here and there, so give ``--decode winfer`` to read the files'
bytes and decode them with winfer's decoder (the CLI's) instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="winfer model: .yaml (with its weights) or .onnx")
    p.add_argument("images", nargs="+", help="image files, folders of them, or URIs (s3://...)")
    p.add_argument("-o", "--output", required=True, help="output folder (Ray writes one file per block)")
    p.add_argument("--format", choices=["csv", "parquet"], default="csv", help="output format (default csv)")
    p.add_argument("--workers", type=int, default=2, help="actors, each with one winfer session (default 2)")
    p.add_argument("--threads", type=int, default=1, help="engine threads per worker; Ray reserves as many CPUs")
    p.add_argument("--batch", type=int, default=16, help="images per engine run (default 16)")
    p.add_argument("--conv", default="im2win", help="convolution algorithm (default im2win)")
    p.add_argument("--weights", default=None, help="weights file in place of the model's own")
    p.add_argument("--decode", choices=["ray", "winfer"], default="ray",
                   help="ray: Ray's read_images decodes (Pillow); winfer: read the bytes, decode as the CLI does")
    p.add_argument("--progress", action="store_true", help="show Ray Data's progress bars")
    p.add_argument("--ray-temp-dir", default=None,
                   help="local Ray's session folder (default: Ray's, /tmp/ray); not used with RAY_ADDRESS")
    return p.parse_args(argv)


class WinferClassifier:
    """A Ray Data callable class: one winfer session per actor, reused for every batch."""

    def __init__(self, model_path, weights, batch, threads, conv):
        import winfer  # imported in the worker process

        self.winfer = winfer
        self.model = winfer.Model(model_path, weights=weights)
        self.session = self.model.session(batch=batch, threads=threads, conv=conv)

    def __call__(self, rows):
        # rows["image"]: uint8 pixel arrays (HxW or HxWx3; the images of a batch may differ in
        # size) from read_images, or rows["bytes"]: the files' bytes (--decode winfer).
        images = rows["image"] if "image" in rows else [bytes(b) for b in rows["bytes"]]
        top1 = [p[0] for p in self.winfer.classify(self.session, list(images), top=1)]
        return {
            "path": rows["path"],
            "label": [p.label for p in top1],
            "index": [p.index for p in top1],
            "probability": [p.probability for p in top1],
        }


def input_channels(model_path, weights):
    """The model's input channels (1 = grayscale), read on the driver to pick the decoding mode."""
    import winfer

    (shape,) = winfer.Model(model_path, weights=weights).inputs.values()
    return int(shape[1]) if len(shape) == 4 else 3


def classify_with_ray(args):
    import ray

    model = os.path.abspath(args.model) if "://" not in args.model else args.model
    weights = os.path.abspath(args.weights) if args.weights else None
    images = [os.path.abspath(p) if "://" not in p else p for p in args.images]
    if "RAY_ADDRESS" in os.environ:
        ray.init()  # joins the cluster RAY_ADDRESS names
    else:
        # One logical CPU more than the workers hold, for the read (decode) and write tasks: with
        # every CPU reserved by the actors, Ray Data cannot schedule a read and waits forever.
        ray.init(num_cpus=args.workers * args.threads + 1, include_dashboard=False, _temp_dir=args.ray_temp_dir)
    ray.data.DataContext.get_current().enable_progress_bars = args.progress

    if args.decode == "ray":
        mode = "L" if input_channels(model, weights) == 1 else "RGB"
        ds = ray.data.read_images(images, include_paths=True, mode=mode)
    else:
        ds = ray.data.read_binary_files(images, include_paths=True)
    results = ds.map_batches(
        WinferClassifier,
        fn_constructor_args=(model, weights, args.batch, args.threads, args.conv),
        batch_size=args.batch,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=args.workers),
        num_cpus=args.threads,
    )
    start = time.perf_counter()
    # The rows are small (path, label, index, probability): materialized once, so that counting
    # them does not run the pipeline a second time.
    results = results.materialize()
    count = results.count()
    seconds = time.perf_counter() - start
    if args.format == "csv":
        results.write_csv(args.output)
    else:
        results.write_parquet(args.output)
    return count, seconds


def main(argv=None):
    args = parse_args(argv)
    if args.workers < 1 or args.threads < 1 or args.batch < 1:
        sys.exit("ray_classify: --workers, --threads and --batch must be >= 1")
    count, seconds = classify_with_ray(args)
    print(f"ray_classify: {count} images in {seconds:.2f} s ({count / seconds:.1f} images/s; "
          f"{args.workers} worker(s) x {args.threads} thread(s), batch {args.batch}), "
          f"results in {args.output} ({args.format})")


if __name__ == "__main__":
    main()
