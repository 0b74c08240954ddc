import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The clock a frame source's presentation timestamps are on.
public enum FrameClock: String, Sendable, Hashable, CaseIterable {
    /// CLOCK_MONOTONIC seconds (since boot, not counting suspend): V4L2 cameras. A timestamp
    /// maps to a wall-clock moment through `WallClock`.
    case monotonic
    /// Time within the media, starting near zero: files, image folders, synthetic scenes. It
    /// says where in the input a frame is, not when it was taken.
    case media
}

/// Maps CLOCK_MONOTONIC times (what V4L2 drivers stamp frames with) to wall-clock `Date`s.
///
/// The offset between the two clocks is measured once, at first use of `shared`, and then used
/// for every conversion, so two frames keep their spacing exactly and one run's times never jump
/// when NTP slews the wall clock. The measurement reads CLOCK_REALTIME between two
/// CLOCK_MONOTONIC reads and keeps the tightest of several tries; its error is at most
/// `uncertainty`.
///
/// The corresponding C function is `clock_gettime(CLOCK_MONOTONIC / CLOCK_REALTIME)`.
///
/// Threading: value type; thread-safe. `shared` is initialised once, from any thread.
public struct WallClock: Sendable, Hashable {
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, in seconds, at the measurement.
    public let offset: Double
    /// Half the monotonic interval the realtime read was bracketed by: the most the offset can be off.
    public let uncertainty: Double

    /// The process's one mapping, measured at first use.
    public static let shared = WallClock.measure()

    /// A mapping with a known offset (tests, or a clock measured elsewhere).
    public init(offset: Double, uncertainty: Double = 0) {
        self.offset = offset
        self.uncertainty = uncertainty
    }

    /// Measures the offset now: `tries` brackets, the narrowest wins (a preemption between the
    /// reads only widens the bracket it happened in).
    public static func measure(tries: Int = 7) -> WallClock {
        var best: (offset: Double, halfWidth: Double)?
        for _ in 0..<max(1, tries) {
            let before = now(CLOCK_MONOTONIC)
            let wall = now(CLOCK_REALTIME)
            let after = now(CLOCK_MONOTONIC)
            let halfWidth = (after - before) / 2
            if best == nil || halfWidth < best!.halfWidth {
                best = (wall - (before + halfWidth), halfWidth)
            }
        }
        return WallClock(offset: best!.offset, uncertainty: best!.halfWidth)
    }

    /// The wall-clock moment of a CLOCK_MONOTONIC time.
    public func date(monotonic time: MediaTime) -> Date {
        Date(timeIntervalSince1970: time.seconds + offset)
    }

    /// The wall-clock moment of a frame stamped `time` on `clock`. Media time says nothing about
    /// when a frame was taken, so for `.media` the answer is `processedAt` (the moment the
    /// caller handled the frame; default: now).
    public func date(for time: MediaTime, on clock: FrameClock, processedAt: Date = Date()) -> Date {
        switch clock {
        case .monotonic: date(monotonic: time)
        case .media: processedAt
        }
    }

    /// CLOCK_MONOTONIC now, as a media time in nanoseconds (what a V4L2 timestamp of a frame
    /// taken now would read).
    public static func monotonicNow() -> MediaTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MediaTime(value: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec), timescale: 1_000_000_000)
    }

    private static func now(_ clock: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A wall-clock moment in the local time zone (`TZ`, else the system's), to the millisecond:
/// the one place that formats wall times for events and file names.
///
/// The corresponding C function is `localtime_r`. Value type; thread-safe.
public struct LocalTimestamp: Sendable, Hashable {
    public let year: Int
    public let month: Int
    public let day: Int
    public let hour: Int
    public let minute: Int
    public let second: Int
    public let millisecond: Int
    /// Seconds east of UTC (`+01:00` is 3600).
    public let utcOffsetSeconds: Int

    // localtime_r need not read TZ itself (POSIX); tzset once makes it.
    private static let timeZoneLoaded: Void = tzset()

    /// `date` truncated to the millisecond, in the local time zone.
    public init(_ date: Date) {
        _ = Self.timeZoneLoaded
        let ms = MediaTime.saturatingInt64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        year = Int(parts.tm_year) + 1900
        month = Int(parts.tm_mon) + 1
        day = Int(parts.tm_mday)
        hour = Int(parts.tm_hour)
        minute = Int(parts.tm_min)
        second = Int(parts.tm_sec)
        millisecond = Int(ms - Int64(seconds) * 1000)
        utcOffsetSeconds = Int(parts.tm_gmtoff)
    }

    /// RFC 3339 with milliseconds and the numeric offset: `2026-11-24T17:03:12.345+01:00`.
    public var rfc3339: String {
        let offset = abs(utcOffsetSeconds) / 60
        return String(
            format: "%04d-%02d-%02dT%@%@%02d:%02d", year, month, day, timeOfDay, utcOffsetSeconds < 0 ? "-" : "+",
            offset / 60, offset % 60)
    }

    /// `17:03:12.345`.
    public var timeOfDay: String {
        String(format: "%02d:%02d:%02d.%03d", hour, minute, second, millisecond)
    }

    /// `20261124-170312.345`: sorts by time, no characters a file system or shell minds.
    public var fileNameStamp: String {
        String(format: "%04d%02d%02d-%02d%02d%02d.%03d", year, month, day, hour, minute, second, millisecond)
    }
}
