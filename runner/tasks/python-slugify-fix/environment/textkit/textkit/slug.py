import re
import unicodedata


def slugify(text: str, separator: str = "-") -> str:
    """Lowercase ASCII words of `text` joined by `separator`."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.split(r"[^A-Za-z0-9]", ascii_text.lower())
    return separator.join(words)
