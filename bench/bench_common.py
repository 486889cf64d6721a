"""Helpers shared by the Python benchmark programs."""


def fs_type(path):
    """The file-system type of the mount holding `path` (the figures depend on it: fsync on ext4 vs tmpfs)."""
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if path.startswith(parts[1]) and len(parts[1]) > len(best):
                best, kind = parts[1], parts[2]
    return kind
