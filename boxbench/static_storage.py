"""Static files as served: hashed names (whitenoise sends them with a year's immutable cache)
and a brotli and a gzip copy of each, made once per content rather than on every collectstatic."""

import gzip
from collections.abc import Callable
from pathlib import Path

from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage


def _holds(copy: Path, data: bytes, decompress: Callable[[bytes], bytes]) -> bool:
    try:
        return decompress(copy.read_bytes()) == data
    except Exception:  # noqa: BLE001  none yet, cut short or not a stream: make it again
        return False


class FreshCompressor(Compressor):
    """Leaves a file alone while its compressed copies still hold its content. collectstatic
    compresses every file each time it runs (every `boxbench.sh run`, and it rewrites each
    script's hashed file, so times tell nothing), and brotli's best level takes ten seconds
    and more for one plotly.js bundle on a two-core machine; decompressing takes milliseconds."""

    def compress(self, path):
        decoders: dict[str, Callable[[bytes], bytes]] = {".gz": gzip.decompress}
        if self.use_brotli:
            import brotli

            decoders[".br"] = brotli.decompress
        data = Path(path).read_bytes()
        if all(_holds(Path(path + suffix), data, d) for suffix, d in decoders.items()):
            return [path + suffix for suffix in decoders]
        return super().compress(path)


class StaticStorage(CompressedManifestStaticFilesStorage):
    def create_compressor(self, **kwargs):
        return FreshCompressor(**kwargs)
