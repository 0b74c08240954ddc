#!/usr/bin/python3
"""Runs cvcam's benchmark (called by Tools/bench, which builds the binaries first) and writes
results.json and results.md into the output folder.

Sections: batch throughput (cvcam library, cvcam CLI, the Python loop in loop.py, zbarimg),
live latency at 30 fps, scaling, per-stage breakdown; or, with --soak SECONDS, only the soak.
Every number is measured in this run on this machine; ratios compare peers on the same clip,
run alternately so background load hits both alike.
"""
import collections
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = "/usr/bin/python3"


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run_json(cmd, kind=None):
    """Runs cmd, returns the JSON lines it printed (the last with 'kind' == kind if given)."""
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    lines = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    if kind is not None:
        lines = [l for l in lines if l.get("kind", l.get("type")) == kind]
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)} printed no result: {p.stdout[-400:]} {p.stderr[-400:]}")
    return lines


def try_json(cmd, kind, errors):
    """run_json, but a failure is recorded in `errors` and gives [] (the other peers still run)."""
    try:
        return run_json(cmd, kind)
    except RuntimeError as e:
        errors.append(str(e))
        log(str(e)[:300])
        return []


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    import cv2
    return {
        "nproc": os.cpu_count(), "cpu": model, "load_average": os.getloadavg(),
        "kernel": platform.release(), "opencv": cv2.__version__,
        "opencv_threads": cv2.getNumThreads(),
    }


def median_run(runs, key="fps"):
    """The run whose `key` is the median (so all its fields belong together)."""
    if not runs:
        return {key: None, "faces_per_frame": None, "codes_per_frame": None, "runs": []}
    runs = sorted(runs, key=lambda r: r[key])
    return dict(runs[len(runs) // 2], runs=[r[key] for r in runs])


def clip_name(c):
    return f"{c['width']}x{c['height']} f{c['faces']} c{c['codes']}"


def throughput(args, bins, clips):
    rows = []
    tp = [c for c in clips if c["kind"] == "throughput"]
    for c in tp:
        log(f"throughput {clip_name(c)}")
        lib, std, py = [], [], []
        for _ in range(args.repeat):
            lib += try_json([bins["pipeline"], "batch", "--input", c["path"], "--types", "face,qr"], "batch", args.errors)
            # The same library with faces at the frame's own size, as the Python loop runs YuNet.
            std += try_json([bins["pipeline"], "batch", "--input", c["path"], "--types", "face,qr",
                             "--face-detection", "standard"], "batch", args.errors)
            py += run_json([PY, "Tools/baseline/loop.py", "--input", c["path"], "--faces", "--codes"], "batch")
        cli_faces = (try_json([bins["cvcam"], "faces", "--input", c["path"], "--batch", "--json"], "summary", args.errors) or [{}])[-1]
        lib_m, std_m, py_m = median_run(lib), median_run(std), median_run(py)
        ratio = lib_m["fps"] / py_m["fps"] if lib_m["fps"] and py_m["fps"] else None
        ratio_std = std_m["fps"] / py_m["fps"] if std_m["fps"] and py_m["fps"] else None
        target = 1.5 if (c["width"], c["height"]) == (1280, 720) else 1.0
        rows.append({
            "clip": clip_name(c), "width": c["width"], "height": c["height"], "faces": c["faces"],
            "codes": c["codes"], "frames": c["frames"], "lib": lib_m, "lib_standard": std_m, "python": py_m,
            "ratio_standard": None if ratio_std is None else round(ratio_std, 2),
            "cli_faces_fps": cli_faces.get("fps"), "ratio": None if ratio is None else round(ratio, 2),
            "target": target, "pass": ratio is not None and ratio >= target,
        })
    return rows


def codes_only(args, bins, clips):
    rows = []
    for c in [c for c in clips if c["kind"] == "throughput" and c["faces"] == 0 and c["codes"] > 0]:
        log(f"codes only {clip_name(c)}")
        lib, py = [], []
        for _ in range(args.repeat):
            lib += try_json([bins["pipeline"], "batch", "--input", c["path"], "--types", "qr"], "batch", args.errors)
            py += run_json([PY, "Tools/baseline/loop.py", "--input", c["path"], "--codes"], "batch")
        cli = (try_json([bins["cvcam"], "scan", "--input", c["path"], "--batch", "--json"], "summary", args.errors) or [{}])[-1]
        zbar = zbarimg_fps(c)
        lib_m, py_m = median_run(lib), median_run(py)
        rows.append({
            "clip": clip_name(c), "lib": lib_m, "python": py_m, "cli_scan_fps": cli.get("fps"), "zbarimg": zbar,
            "ratio_python": round(lib_m["fps"] / py_m["fps"], 2) if lib_m["fps"] and py_m["fps"] else None,
            "ratio_zbarimg": round(lib_m["fps"] / zbar["fps"], 2) if lib_m["fps"] and zbar["fps"] else None,
        })
    return rows


def zbarimg_fps(c):
    """zbarimg over the clip's frames extracted as PGM (gray, the cheapest file for it to read),
    QR only, one process for all frames. Extraction is not timed."""
    import cv2
    folder = tempfile.mkdtemp(prefix="cvcam-bench-frames-")
    try:
        cap = cv2.VideoCapture(c["path"])
        n = 0
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            cv2.imwrite(os.path.join(folder, f"{n:05d}.pgm"), cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))
            n += 1
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder))
        start = time.perf_counter()
        p = subprocess.run(["zbarimg", "-q", "--raw", "-Sdisable", "-Sqrcode.enable"] + files,
                           capture_output=True, text=True)
        seconds = time.perf_counter() - start
        found = len([l for l in p.stdout.splitlines() if l.strip()])
        return {"frames": n, "seconds": round(seconds, 3), "fps": round(n / seconds, 2),
                "codes_per_frame": round(found / max(n, 1), 2)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def live(args, bins, clips):
    rows = []
    for c in [c for c in clips if c["kind"] == "live"]:
        log(f"live {clip_name(c)} ({c['frames']} frames at 30 fps)")
        runs = []
        for _ in range(args.repeat):
            runs += run_json([bins["pipeline"], "live", "--input", c["path"]], "live")
        m = median_run(runs, "p99_ms")
        m["p99_runs"] = m.pop("runs")
        m["clip"] = clip_name(c)
        m["width"], m["height"] = c["width"], c["height"]
        if (c["width"], c["height"]) == (1280, 720):
            m["target"] = "no skipped frames, p99 < 50 ms"
            m["pass"] = m["skipped"] == 0 and m["video_output_dropped"] == 0 and 0 <= m["p99_ms"] < 50
        rows.append(m)
    return rows


def live_bound(r):
    """What limits a live run: analysed frames per second and the stage that takes longest."""
    fps = r["analysed"] / r["seconds"] if r["seconds"] else 0
    stage = "codes (ZBar)" if r["codes_ms_per_frame"] >= 0.9 * r["faces_ms_per_frame"] else "faces (YuNet)"
    busiest = max(r["faces_ms_per_frame"], r["codes_ms_per_frame"])
    budget = 1000 / 30
    state = "within" if busiest < budget else "over"
    return (f"analysed {fps:.1f} of 30 fps, {r['skipped']} skipped; detection takes {busiest:.1f} ms per frame "
            f"({state} the {budget:.1f} ms budget), bound by {stage}; CPU {r['cpu_percent']:.0f} % of one core "
            f"({r['cpu_ms_per_frame']:.1f} ms per frame incl. decode)")


def fmt(v, digits=1):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "PASS" if v else "FAIL"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def markdown(res):
    m = res["machine"]
    out = [f"# cvcam benchmark — {res['date']}", "",
           f"Machine: {m['nproc']} cores, {m['cpu']}, Linux {m['kernel']}, OpenCV {m['opencv']} "
           f"({m['opencv_threads']} threads); load average at start {', '.join(f'{x:.2f}' for x in m['load_average'])} "
           "(other jobs share this machine). Medians of "
           f"{res['repeat']} runs where marked; clips are {res.get('frames', '?')} frames, MJPEG AVI, 30 fps.", ""]
    if res.get("throughput"):
        out += ["## Batch throughput: faces + QR, every frame", "",
                "cvcam lib = `bench-pipeline batch` (CaptureSession + CaptureMetadataOutput, `[.face, .qr]`, release build); "
                "Python = `Tools/baseline/loop.py` (cv2.VideoCapture → cv2.FaceDetectorYN, same model, score 0.9 → "
                "cvtColor gray → pyzbar QR only). Found = faces / codes per frame (sanity check that both did the work). "
                "CLI = `cvcam faces --batch --json` (faces only; its summary fps). cvcam lib uses the metadata "
                "output's default face detection (`.realTime`: frames scaled to a 640 px long side); "
                "`.standard` = the same library with faces at the frame's own size up to 1280 px, as the Python "
                "loop runs YuNet (1080p is reduced to 1280).", "",
                "| clip | cvcam lib fps | Python fps | ratio | target | result | found lib (f/c) | found Python (f/c) | "
                "cvcam .standard fps | .standard / Python | found .standard (f/c) | CLI faces fps |",
                "|---|---:|---:|---:|---:|---|---|---|---:|---:|---|---:|"]
        for r in res["throughput"]:
            sd = r.get("lib_standard") or {}
            out.append(f"| {r['clip']} | {fmt(r['lib']['fps'], 2)} | {fmt(r['python']['fps'], 2)} | {fmt(r['ratio'], 2)}× | "
                       f"≥ {r['target']}× | {fmt(r['pass'])} | {r['lib']['faces_per_frame']}/{r['lib']['codes_per_frame']} | "
                       f"{r['python']['faces_per_frame']}/{r['python']['codes_per_frame']} | {fmt(sd.get('fps'), 2)} | "
                       f"{fmt(r.get('ratio_standard'), 2)}× | {sd.get('faces_per_frame')}/{sd.get('codes_per_frame')} | "
                       f"{fmt(r['cli_faces_fps'])} |")
        out.append("")
    if res.get("codes_only"):
        out += ["## Codes alone (QR)", "",
                "zbarimg: one process over the frames extracted as PGM (extraction not timed; includes process start "
                "and file reads). Python: cv2.VideoCapture → gray → pyzbar. CLI: `cvcam scan --batch --json`.", "",
                "| clip | cvcam lib fps | cvcam scan CLI fps | Python fps | zbarimg fps | lib/Python | lib/zbarimg | codes/frame lib / Py / zbarimg |",
                "|---|---:|---:|---:|---:|---:|---:|---|"]
        for r in res["codes_only"]:
            out.append(f"| {r['clip']} | {fmt(r['lib']['fps'], 2)} | {fmt(r['cli_scan_fps'])} | {fmt(r['python']['fps'], 2)} | "
                       f"{fmt(r['zbarimg']['fps'], 2)} | {fmt(r['ratio_python'], 2)}× | {fmt(r['ratio_zbarimg'], 2)}× | "
                       f"{r['lib']['codes_per_frame']} / {r['python']['codes_per_frame']} / {r['zbarimg']['codes_per_frame']} |")
        out.append("")
    if res.get("live"):
        out += ["## Live: clip paced at 30 fps (`.realTime`), faces + QR", "",
                "Latency = when the frame's metadata reached the delegate − when the frame clock released the frame "
                "(release time = T0 + pts, T0 = earliest arrival − pts at a native-format video data output). "
                "Skipped = frames replaced while detection was busy. CPU from getrusage over the run.", "",
                "| clip | frames | analysed | skipped | p50 ms | p95 ms | p99 ms (runs) | max ms | CPU ms/frame | CPU % | faces ms | codes ms | target |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in res["live"]:
            tgt = f"{r['target']}: {fmt(r['pass'])}" if "target" in r else "report"
            out.append(f"| {r['clip']} | {r['frames']} | {r['analysed']} | {r['skipped']} | {fmt(r['p50_ms'])} | {fmt(r['p95_ms'])} | "
                       f"{fmt(r['p99_ms'])} ({', '.join(fmt(x) for x in r['p99_runs'])}) | {fmt(r['max_ms'])} | "
                       f"{fmt(r['cpu_ms_per_frame'])} | {fmt(r['cpu_percent'])} | {fmt(r['faces_ms_per_frame'])} | "
                       f"{fmt(r['codes_ms_per_frame'])} | {tgt} |")
        out.append("")
        for r in res["live"]:
            out.append(f"- {r['clip']}: {live_bound(r)}")
        out += ["", "(faces ms in a faces + codes run is measured until both stages are done, so it is the larger of the two; "
                "codes ms is the code stage alone.)", ""]
    if res.get("scaling"):
        out += ["## Scaling (synthetic input rendered in-process, no file decode, every frame analysed)", "",
                "faces ms = face stage alone per frame; codes ms = code stage alone; both = wall and CPU per frame "
                "with both (they run in parallel). ms/MP = (faces + codes) per megapixel.", "",
                "| axis | size | faces | codes | ROI area | faces ms | codes ms | both wall ms | both CPU ms | (faces+codes) ms/MP |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in res["scaling"]:
            mp = r["megapixels"] * r["roi_area"]
            out.append(f"| {r['axis']} | {r['width']}x{r['height']} | {r['faces']} | {r['codes']} | {r['roi_area']} | "
                       f"{fmt(r['faces_ms'])} | {fmt(r['codes_ms'])} | {fmt(r['both_wall_ms'])} | {fmt(r['both_cpu_ms'])} | "
                       f"{fmt((r['faces_ms'] + r['codes_ms']) / mp)} |")
        if res.get("scaling_notes"):
            out += [""] + [f"- {n}" for n in res["scaling_notes"]]
        out.append("")
    if res.get("breakdown"):
        b = res["breakdown"]
        out += [f"## Per-stage breakdown ({b['clip']})", "",
                "capture/decode = CPU per frame of a session with a native-format video data output; conversion = extra "
                "CPU per frame when that output converts to gray; faces / codes = each stage alone (stageSeconds); "
                "delivery = p50 from a no-work stage's return to the delegate.", "",
                "| stage | ms per frame |", "|---|---:|"]
        for k, v in b["stages_ms"].items():
            out.append(f"| {k} | {fmt(v, 3)} |")
        out += ["", f"Slowest stage: **{b['slowest']}**. Pipeline without detection (no-work stage): "
                    f"{b['pipeline_without_detection_ms_per_frame']} ms per frame wall; delivery p99 {b['delivery_p99_ms']} ms.", ""]
    if res.get("soak"):
        s = res["soak"]
        out += [f"## Soak: {s['seconds']} s of 720p30 synthetic input, faces and codes appearing and leaving", "",
                f"{s['frames']} frames, {s['analysed']} analysed, {s['skipped']} skipped, CPU {s['cpu_percent']} %. "
                f"{s['samples']} samples of /proc/self (trend after a {s['warm_up_s']} s warm-up).", "",
                "| measure | first | last | slope per 10 min | target | result |", "|---|---:|---:|---:|---|---|",
                f"| resident memory (MB) | {s['rss_mb_first']} | {s['rss_mb_last']} | {s['rss_slope_mb_per_10min']} | < 1 MB / 10 min | {fmt(s['rss_slope_mb_per_10min'] < 1)} |",
                f"| malloc: in use (MB, mallinfo2) | {s['heap_in_use_mb_first']} | {s['heap_in_use_mb_last']} | {s['heap_in_use_slope_mb_per_10min']} | (explains memory) | |",
                f"| malloc: held from the system (MB) | {s['heap_held_mb_first']} | {s['heap_held_mb_last']} | {s['heap_held_slope_mb_per_10min']} | (explains memory) | |",
                f"| open descriptors | {s['fds_first']} | {s['fds_last']} | {s['fds_slope_per_10min']} | no growth | {fmt(not s['fds_grew'])} |",
                f"| threads | {s['threads_first']} | {s['threads_last']} | {s['threads_slope_per_10min']} | no growth | {fmt(not s['threads_grew'])} |",
                f"| face appearances reported (enter) | | {s['faces_reported']} / {s['faces_expected']} | | all | {fmt(s['faces_reported'] == s['faces_expected'])} |",
                f"| code appearances reported (appear) | | {s['codes_reported']} / {s['codes_expected']} | | all | {fmt(s['codes_reported'] == s['codes_expected'])} |",
                "", f"Face enter events in total: {s['face_enters_total']} for {s['faces_expected']} appearances "
                    f"(more would mean a face's track split in two); code appear events: {s['code_appears_total']} "
                    f"for {s['codes_expected']}.", ""]
        changes = s.get("thread_changes", [])
        if changes:
            out += ["Thread count changes (names from /proc/self/task/*/comm):", ""]
            prev = []
            for c in changes:
                added = sorted((collections.Counter(c["names"]) - collections.Counter(prev)).elements())
                removed = sorted((collections.Counter(prev) - collections.Counter(c["names"])).elements())
                detail = (f" (+{', '.join(added)}" if added else " (") + (f" −{', '.join(removed)}" if removed else "") + ")"
                out.append(f"- at {c['t']} s: {len(c['names'])} threads: {', '.join(c['names'])}"
                           + (detail if prev and (added or removed) else ""))
                prev = c["names"]
            out.append("")
    if res.get("errors"):
        out += ["## Errors", ""] + [f"- {e[:300]}" for e in res["errors"]] + [""]
    out += ["## Targets", ""] + [f"- {t['name']}: {t['value']} → **{fmt(t['pass'])}**" for t in res["targets"]] + [""]
    return "\n".join(out)


def targets(res):
    t = []
    for r in res.get("throughput", []):
        t.append({"name": f"batch {r['clip']} ≥ {r['target']}× Python", "value": f"{r['ratio']}×", "pass": r["pass"]})
    for r in res.get("live", []):
        if "target" in r:
            t.append({"name": f"live {r['clip']}: {r['target']}",
                      "value": f"skipped {r['skipped']}, p99 {r['p99_ms']} ms", "pass": r["pass"]})
    s = res.get("soak")
    if s:
        t.append({"name": "soak memory slope < 1 MB / 10 min", "value": f"{s['rss_slope_mb_per_10min']} MB", "pass": s["rss_slope_mb_per_10min"] < 1})
        t.append({"name": "soak: no leaked descriptors", "value": f"{s['fds_first']} → {s['fds_last']}", "pass": not s["fds_grew"]})
        t.append({"name": "soak: no leaked threads", "value": f"{s['threads_first']} → {s['threads_last']}", "pass": not s["threads_grew"]})
        t.append({"name": "soak: every appearance reported", "value": f"faces {s['faces_reported']}/{s['faces_expected']}, codes {s['codes_reported']}/{s['codes_expected']}",
                  "pass": s["faces_reported"] == s["faces_expected"] and s["codes_reported"] == s["codes_expected"]})
    return t


def scaling_notes(rows):
    """Where cost grows faster than pixels: compare each resolution step's cost ratio with its pixel ratio."""
    notes = []
    res = [r for r in rows if r["axis"] == "resolution"]
    for a, b in zip(res, res[1:]):
        px = b["megapixels"] / a["megapixels"]
        for k in ("faces_ms", "codes_ms"):
            if a[k] > 0:
                g = b[k] / a[k]
                verdict = "faster than" if g > px * 1.1 else ("slower than" if g < px * 0.9 else "in line with")
                notes.append(f"{k.split('_')[0]} {a['width']}x{a['height']} → {b['width']}x{b['height']}: pixels ×{px:.2f}, "
                             f"cost ×{g:.2f} ({verdict} the pixels)")
    return notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, ".build", "bench"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "App", ".build", "release"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--live-frames", type=int, default=300)
    ap.add_argument("--soak", type=float)
    ap.add_argument("--scaling-frames", type=int, default=12)
    ap.add_argument("--only", default="throughput,codes,live,scaling,breakdown")
    args = ap.parse_args()
    args.errors = []
    os.makedirs(args.out, exist_ok=True)
    bins = {"pipeline": os.path.join(args.bin, "bench-pipeline"), "cvcam": os.path.join(args.bin, "cvcam")}
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), "repeat": args.repeat,
           "frames": args.frames}
    if args.soak:
        log(f"soak for {args.soak:.0f} s")
        res["soak"] = run_json([bins["pipeline"], "soak", "--seconds", str(args.soak)], "soak")[-1]
        name = "soak"
    else:
        clips_dir = os.path.join(args.out, f"clips-{args.frames}")
        log(f"clips in {clips_dir}")
        subprocess.run([bins["pipeline"], "clips", "--out", clips_dir, "--frames", str(args.frames),
                        "--live-frames", str(args.live_frames)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(os.path.join(clips_dir, "manifest.json")) as f:
            clips = json.load(f)["clips"]
        only = set(args.only.split(","))
        if "throughput" in only:
            res["throughput"] = throughput(args, bins, clips)
        if "codes" in only:
            res["codes_only"] = codes_only(args, bins, clips)
        if "live" in only:
            res["live"] = live(args, bins, clips)
        if "scaling" in only:
            log("scaling")
            res["scaling"] = run_json([bins["pipeline"], "scaling", "--frames", str(args.scaling_frames)], "scaling")
            res["scaling_notes"] = scaling_notes(res["scaling"])
        if "breakdown" in only:
            log("breakdown")
            c = next(c for c in clips if c["kind"] == "throughput" and c["width"] == 1280 and c["faces"] == 1 and c["codes"] == 1)
            b = run_json([bins["pipeline"], "breakdown", "--input", c["path"]], "breakdown")[-1]
            b["clip"] = clip_name(c)
            res["breakdown"] = b
        name = "results"
    res["targets"] = targets(res)
    res["errors"] = args.errors
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    md = markdown(res)
    with open(os.path.join(args.out, f"{name}.md"), "w") as f:
        f.write(md)
    print(md)
    log(f"wrote {os.path.join(args.out, name)}.md and .json")


if __name__ == "__main__":
    main()
