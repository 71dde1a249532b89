"""Batch manifests from an untrusted hand: `out` templates allow plain {name}/{target} only
(str.format could reach attributes or build a 3 GB string), the YAML document may not expand past a
node budget (billion laughs), and only a regular file of bounded size is read."""

from __future__ import annotations

import os

import pytest

from tf_convert.app.batch import manifest

PLAIN_ONLY = "may only use the plain placeholders {name} and {target}"


def _toml(tmp_path, out: str):
    (tmp_path / "a.pb").write_bytes(b"x")
    path = tmp_path / "m.toml"
    path.write_text(f'[[model]]\nname = "n"\nsource = "a.pb"\ntargets = ["onnx", "torch"]\nout = "{out}"\n')
    return path


@pytest.mark.parametrize("out", [
    "{name.foo}/{target}",        # attribute: was exit 1
    "{name:>300000000}/{target}",  # format spec: was 3.2 GB, then exit 1
    "{name.__class__}-{target}",  # was accepted: a folder named <class 'str'>-onnx
    "{name[0]}/{target}",
    "{name!r}/{target}",
    "{other}/{target}",
    "{name/{target}",
])
def test_template_beyond_plain_fields_is_refused(tmp_path, out):
    with pytest.raises(manifest.ManifestError) as err:
        manifest.load(_toml(tmp_path, out), out_root=tmp_path)
    assert PLAIN_ONLY in err.value.problems[0] and ":5:" in err.value.problems[0]


@pytest.mark.parametrize("out,onnx_dir", [
    ("{name}/{target}", "n/onnx"),
    ("{{braces}}/{name}-{target}", "{braces}/n-onnx"),
])
def test_plain_templates_still_work(tmp_path, out, onnx_dir):
    (entry,) = manifest.load(_toml(tmp_path, out), out_root=tmp_path)
    assert entry.outs["onnx"] == tmp_path / onnx_dir


def test_billion_laughs_is_refused_before_expanding(tmp_path):
    pytest.importorskip("yaml")
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9) + "]")
    path = tmp_path / "m.yaml"
    path.write_text("\n".join(lines + ["model: []"]) + "\n")
    with pytest.raises(manifest.ManifestError) as err:
        manifest.load(path, out_root=tmp_path)
    assert "expands to more than" in err.value.problems[0]


def test_a_few_aliases_are_fine(tmp_path):
    pytest.importorskip("yaml")
    (tmp_path / "a.pb").write_bytes(b"x")
    path = tmp_path / "m.yaml"
    path.write_text("shapes: &s {input: [1, 8, 8, 3]}\nmodel:\n"
                    "  - {name: a, source: a.pb, targets: [onnx], input_shapes: *s}\n")
    with pytest.raises(manifest.ManifestError) as err:  # 'shapes' is not a top-level key: found, not expanded
        manifest.load(path, out_root=tmp_path)
    assert "unknown top-level key 'shapes'" in err.value.problems[0]


def test_fifo_and_oversized_manifests_are_refused(tmp_path):
    fifo = tmp_path / "m.toml"
    os.mkfifo(fifo)
    with pytest.raises(manifest.ManifestError) as err:
        manifest.load(fifo, out_root=tmp_path)
    assert "not a regular file" in err.value.problems[0]
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * manifest.MAX_MANIFEST_BYTES + "\n")
    with pytest.raises(manifest.ManifestError) as err:
        manifest.load(big, out_root=tmp_path)
    assert "at most" in err.value.problems[0]
