import CaptureKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The write protocol for `record`'s movie: refuse what must not be written over; when a file
/// is to be replaced (`--overwrite`), record beside it under a temporary name and put the result
/// in place only when it is complete; when the name is free, record under it directly, so a
/// recorder killed mid-file still leaves a playable file under the name asked for.
///
/// A typo in `--input`, a crash or a kill therefore never costs the file that was there
/// before; a second cvcam recording to the same path is refused by an advisory lock
/// (`flock(2)` on `.<name>.lock` beside the target, released by the kernel when the process ends).
package final class OutputFileGuard {
    package let target: URL
    /// Where the recording is written until it is complete: `target` itself when nothing was there.
    package let temporary: URL
    /// Whether the recording goes straight to `target` (nothing to replace).
    package var writesInPlace: Bool { temporary == target }
    private let lockDescriptor: Int32

    /// Checks `target` and takes the lock.
    ///
    /// - Throws: `CLIError.message` when `target` is a folder, is the input, exists without
    ///   `overwrite`, or another cvcam is writing it.
    package init(target: URL, input: String?, overwrite: Bool) throws {
        self.target = target
        let path = target.path
        var st = stat()
        let exists = stat(path, &st) == 0
        if exists && (st.st_mode & S_IFMT) == S_IFDIR {
            throw CLIError.message("\(path) is a folder; -o must name a movie file inside it, e.g. \(path)/movie.avi.")
        }
        if exists, let input, !input.hasPrefix("synthetic:") {
            var inputStat = stat()
            if FilePathBytes.withCString(input, { stat($0, &inputStat) }) == 0 && inputStat.st_dev == st.st_dev && inputStat.st_ino == st.st_ino {
                throw CLIError.message("-o \(path) is the input file; record to another file.")
            }
        }
        if exists && !overwrite {
            throw CLIError.message("\(path) exists; choose another name or pass --overwrite.")
        }
        let folder = target.deletingLastPathComponent().path
        let lockPath = folder + "/." + target.lastPathComponent + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw CLIError.message("Cannot create \(lockPath): \(AtomicFile.advice(for: errno, folder: folder)).")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw CLIError.message("Another cvcam is recording to \(path); wait for it to finish or choose another name.")
        }
        lockDescriptor = fd
        if exists {
            temporary = URL(fileURLWithPath: folder + "/." + target.lastPathComponent + ".\(getpid()).recording.avi")
            unlink(temporary.path)  // a leftover of an earlier run with our pid
        } else {
            temporary = target
        }
    }

    deinit { close(lockDescriptor) }

    /// Puts the finished recording in place: over the old file with `overwrite` (`rename(2)`,
    /// atomic), otherwise only if the name is still free (`link(2)` + `unlink(2)`).
    package func commit(overwrite: Bool) throws {
        if writesInPlace { return }
        if overwrite {
            guard rename(temporary.path, target.path) == 0 else { throw failure("renaming into") }
        } else {
            guard link(temporary.path, target.path) == 0 else { throw failure("linking into") }
            unlink(temporary.path)
        }
    }

    /// Removes the temporary file of a recording that will not be used (a recording made in
    /// place replaced nothing and is kept).
    package func discard() {
        if !writesInPlace { unlink(temporary.path) }
    }

    private func failure(_ step: String) -> CLIError {
        let e = errno
        if e == EEXIST {
            return .message("\(target.path) appeared while recording; the recording is kept at \(temporary.path).")
        }
        return .message(
            "\(step) \(target.path) failed: \(AtomicFile.advice(for: e, folder: target.deletingLastPathComponent().path)); the recording is kept at \(temporary.path).")
    }
}
