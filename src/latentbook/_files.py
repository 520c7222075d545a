"""Small file helpers shared by every wing: hashing, atomic writes, locks, output checks, the cache folder."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import os
import re
import shutil
import stat
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import InvalidInputError, LockedError, OutputExistsError, UnsafePathError

try:
    import fcntl
except ImportError:  # Windows: exclusive_lock goes through filelock, so `import latentbook` works everywhere
    fcntl = None

# mkstemp's random part: ``atomic_write`` names its temporary ``.NAME.XXXXXXXX.tmp``.
TEMPORARY_SUFFIX = ".XXXXXXXX.tmp"


def sha256_file(path: str | Path, block: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def repository_root(start: str | Path | None = None) -> Path | None:
    """The repository at or above ``start`` (the working directory by default): the first folder with a
    ``_toc.yml`` (the book's root) or a ``pyproject.toml``; None outside a checkout."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() or (folder / "pyproject.toml").is_file():
            return folder
    return None


def env_folder(name: str) -> Path | None:
    """The folder environment variable ``name`` names, or None when it is unset or empty; a relative path is
    refused (it would make one folder per working folder: the book's pages run in ``book/``, the command line
    wherever it is typed), and so is a path that is a file (``~`` is expanded)."""
    value = os.environ.get(name)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise InvalidInputError(
            f"{name}={value!r} is a relative path, so each working folder would get its own: give an absolute "
            f"one, e.g. {name}={Path(value).resolve()}."
        )
    if path.exists() and not path.is_dir():
        raise InvalidInputError(
            f"{name}={value!r} is a file, not a folder: point it at a folder (it is created when missing), or "
            "unset it for the default."
        )
    return path


def cache_dir() -> Path:
    """Root of latentbook's cache: ``$LATENTBOOK_CACHE``, else ``$XDG_CACHE_HOME/latentbook``, else
    ``~/.cache/latentbook``. As the XDG spec says, a relative ``XDG_CACHE_HOME`` is ignored (it would make one cache
    per working folder), and so is an empty or relative ``HOME`` (the account's home is used); a relative
    ``LATENTBOOK_CACHE``, set on purpose, is refused (``env_folder``)."""
    root = env_folder("LATENTBOOK_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        root = str(Path(xdg if os.path.isabs(xdg) else _home() / ".cache") / "latentbook")
    path = Path(root)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fallback_cache(path, exc)
    return path


def _home() -> Path:
    """``$HOME`` when it is an absolute path, else the account's home from the password database, else the
    temporary folder (never the working folder or ``/``)."""
    home = os.environ.get("HOME", "")
    if os.path.isabs(home) and home != "/":
        return Path(home)
    try:
        import pwd

        account = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):  # no password database (Windows) or no entry for this user
        account = ""
    return Path(account) if os.path.isabs(account) and account != "/" else Path(tempfile.gettempdir())


def _fallback_cache(wanted: Path, reason: OSError) -> Path:
    """A private temporary cache for this run, when ``wanted`` cannot be written (with a warning)."""
    fallback = Path(tempfile.gettempdir()) / f"latentbook-cache-{os.getuid()}"
    fallback.mkdir(mode=0o700, parents=True, exist_ok=True)
    warnings.warn(
        f"The cache {wanted} is not writable ({reason.strerror or reason}); using {fallback} for this run. "
        "Set LATENTBOOK_CACHE to a writable folder to keep the work for later runs.",
        stacklevel=3,
    )
    return fallback


def probe_write(folder: Path, name: str | None = None) -> OSError | None:
    """Create and remove a file (called ``name``) in ``folder``: the error writing there gives, or None.

    A real write, not ``os.access``: it also catches read-only file systems and names too long for them.
    """
    probe = folder / (name or f".latentbook-probe-{os.getpid()}")
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.unlink(probe)
    except FileExistsError:
        return None
    except OSError as exc:
        return exc
    return None


def writable_cache_folder(folder: Path) -> Path:
    """``folder`` (under ``cache_dir()``) if it can be written, else the same place in a temporary cache."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        error = probe_write(folder.parent)
    except OSError as exc:
        error = exc
    if error is None:
        return folder
    root = cache_dir()
    relative = folder.relative_to(root) if folder.is_relative_to(root) else Path(folder.name)
    moved = _fallback_cache(folder.parent, error) / relative
    moved.parent.mkdir(parents=True, exist_ok=True)
    return moved


def inside(root: Path, *parts: str) -> Path:
    """``root / parts``, refusing any result that would leave ``root`` (``..``, absolute parts, links)."""
    candidate = root.joinpath(*parts).resolve()
    if not candidate.is_relative_to(root.resolve()):
        raise UnsafePathError(f"{'/'.join(parts)!r} would leave the folder {root}; use a plain name.")
    return candidate


def atomic_write(path: str | Path, write: Callable[[Path], None], replace: bool = True) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, fsync it, then rename it onto ``path``.

    At no moment is a half-written file readable under its final name. The file gets the mode a plain ``open``
    would give it (the umask's, or the mode of the file it replaces), not the temporary file's private 0600.
    With ``replace=False`` it is published only if nothing has taken the name meanwhile (``publish_new``): a file
    that appeared while the work ran (another run's) is left as it is, and ``OutputExistsError`` says so.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.is_file() else _umask_mode()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, mode)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            publish_new(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def publish_new(tmp: Path, path: Path) -> None:
    """Give the finished file ``tmp`` the name ``path`` only if no file has it: a hard link, which the kernel refuses
    when the name exists (two runs checking a path before their work and writing it after cannot both win), then
    ``tmp`` removed. On a file system without hard links, a check then a rename (a small window remains)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise OutputExistsError(
            f"{path} appeared while this run worked (another run wrote it): it was left as it is and this run's "
            "result was not written. Choose another path, or pass --force to replace it."
        ) from None
    except OSError:  # no hard links here (some network and FAT file systems)
        if os.path.lexists(path):
            raise OutputExistsError(
                f"{path} appeared while this run worked: it was left as it is. Choose another path, or pass --force."
            ) from None
        os.replace(tmp, path)
        return
    tmp.unlink()


def _umask_mode() -> int:
    """``0o666`` less the process's umask: the mode ``open(path, "w")`` gives a new file."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open folders
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive_lock(lock_file: Path, *, what: str, fix: str, wait: bool = False) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` (which names this process) for the block.

    The kernel drops the lock when the process dies, even by SIGKILL, so a crash never leaves a stale lock.
    Without ``wait``, a lock held by another process raises ``LockedError`` naming it at once.
    """
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        with _portable_lock(lock_file, what, fix, wait):
            yield
        return
    fd = _acquire(lock_file, what, fix, wait)
    try:
        os.ftruncate(fd, 0)
        started = _dt.datetime.now().isoformat(timespec="seconds")
        os.write(fd, f"pid {os.getpid()}, started {started}".encode())
        yield
    finally:
        lock_file.unlink(missing_ok=True)  # while still holding it: a waiter then retries on a fresh file
        os.close(fd)


@contextlib.contextmanager
def computing(entry: Path) -> Iterator[None]:
    """Hold the lock of the cache file ``entry`` while it is computed: a second process asking for the same entry
    waits, then finds it written (check ``entry.is_file()`` again inside the block) instead of computing it twice."""
    lock = entry.with_name(f".{entry.name}.lock")
    with exclusive_lock(lock, what=f"the cache entry {entry.name}", fix="wait for it", wait=True):
        yield


@contextlib.contextmanager
def _portable_lock(lock_file: Path, what: str, fix: str, wait: bool) -> Iterator[None]:
    """``exclusive_lock`` where ``fcntl`` does not exist (Windows): ``filelock``'s lock on the same file, the
    same refusals (a link or a folder at ``lock_file``, ``LockedError`` when held), without the holder's name."""
    from filelock import FileLock, Timeout

    if lock_file.is_symlink():
        raise UnsafePathError(
            f"{lock_file}, where {what} keeps its lock, is a symbolic link: latentbook never writes through one. "
            "Remove it, or choose another output path."
        )
    if lock_file.is_dir():
        raise UnsafePathError(f"{lock_file}, where {what} keeps its lock, is a folder: remove it.")
    lock = FileLock(str(lock_file), timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except Timeout:
        raise LockedError(f"{what} is in use by another latentbook run: {fix}") from None
    try:
        yield
    finally:
        lock.release()


def _open_lock(lock_file: Path, what: str) -> int:
    """Open (or create) ``lock_file`` for the lock, never through a symbolic link (the lock file is truncated and
    written, so a link planted there would overwrite its target) and never anything but a regular file."""
    fix = "remove it, or choose another output path"
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{lock_file}, where {what} keeps its lock, is a symbolic link: latentbook never writes through one. "
                f"{fix[0].upper()}{fix[1:]}."
            ) from None
        if exc.errno == errno.EISDIR:
            raise UnsafePathError(f"{lock_file}, where {what} keeps its lock, is a folder: {fix}.") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePathError(f"{lock_file}, where {what} keeps its lock, is not a regular file: {fix}.")
    return fd


def _acquire(lock_file: Path, what: str, fix: str, wait: bool) -> int:
    while True:
        fd = _open_lock(lock_file, what)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace") or "a process that is starting"
            os.close(fd)
            raise LockedError(f"{what} is in use by another latentbook run ({holder}): {fix}") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock_file).st_ino
        except FileNotFoundError:  # its previous holder removed it between our open and flock
            same = False
        if same:
            return fd
        os.close(fd)


def remove_stale_temporaries(folder: Path, name_pattern: str) -> list[Path]:
    """Delete the ``.NAME.XXXXXXXX.tmp`` files that killed atomic writes left, for names matching the regex.

    Call it only while holding the lock of those names, so no live write loses its temporary file.
    """
    temporary = re.compile(rf"\.(?:{name_pattern})\.[A-Za-z0-9_]{{8}}\.tmp")
    removed = [p for p in folder.glob(".*.tmp") if temporary.fullmatch(p.name) and p.is_file()]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def check_room(path: Path, needed: int, option: str = "--out") -> None:
    """Refuse an output whose disk (that of ``path``'s nearest existing folder) has fewer than ``needed`` bytes
    free: an empty probe file fits a full disk, so the space is checked by what will be written."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    free = shutil.disk_usage(ancestor).free
    if free < needed:
        raise InvalidInputError(
            f"{option} {path}: {free / 2**20:.1f} MiB free on its disk, and the output needs about "
            f"{needed / 2**20:.1f} MiB. Free space first, or choose another {option}."
        )


def check_output_path(path: Path, longest_name: str, option: str = "--out", needed: int = 0) -> None:
    """Refuse, before any work, an output that could not be written when the work is done.

    ``path`` must not be a folder or an existing file that is not a regular one (a device, a pipe, a socket), its
    nearest existing ancestor must be a writable folder with ``needed`` bytes free, and the longest
    temporary name written beside it (``.{longest_name}.XXXXXXXX.tmp``) must fit the file system.
    """
    if path.is_dir():
        raise InvalidInputError(
            f"{option} {path} is a folder: give a file inside it, e.g. {path / 'capture.safetensors'}."
        )
    if path.exists() and not path.is_file():
        raise InvalidInputError(
            f"{option} {path} is not a regular file (a device, a pipe or a socket): latentbook writes regular "
            f"files only, and never replaces one of those. Choose another {option}."
        )
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InvalidInputError(
            f"{option} {path} cannot be created: {ancestor} is a file, not a folder. Choose another {option}."
        )
    temporary = f".{longest_name}{TEMPORARY_SUFFIX}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        error = probe_write(path.parent, temporary)
    except OSError as exc:
        error = exc
    if error is None:
        check_room(path, needed, option)  # writable, so the space is what remains to check
        return
    if error.errno == errno.ENAMETOOLONG:
        raise InvalidInputError(
            f"{option} {path.name!r} is too long for this file system: latentbook writes temporary files "
            f"beside it named like {temporary!r} ({len(os.fsencode(temporary))} bytes). Choose a shorter "
            f"{option}."
        )
    raise InvalidInputError(
        f"Cannot write {option} {path} ({error.strerror or error}): choose a writable folder for {option}."
    )
