import Foundation
import Testing

@testable import CaptureKit

/// The region CaptureKit writes for a point of interest and the auto bits beside it, worked by
/// hand (no camera: the emulator tests check the same through a driver).
@Suite struct PointOfInterestRegionTests {
    typealias Limits = CaptureDevice.RegionLimits

    static func rect(_ value: V4L2ExtendedValue) -> [Int64] {
        guard case .rect(let left, let top, let width, let height) = value else { return [] }
        return [Int64(left), Int64(top), Int64(width), Int64(height)]
    }

    @Test func aFifthOfEachSideCentredOnThePoint() {
        let vga = Limits(left: 0, top: 0, width: 640, height: 480, minWidth: 1, minHeight: 1)
        #expect(Self.rect(CaptureDevice.region(around: CGPoint(x: 0.5, y: 0.5), in: vga)) == [256, 192, 128, 96])
        #expect(Self.rect(CaptureDevice.region(around: CGPoint(x: 0.25, y: 0.75), in: vga)) == [96, 312, 128, 96])
    }

    @Test func edgesKeepTheRegionInsideAWindowThatNeedNotStartAtZero() {
        let window = Limits(left: 100, top: 50, width: 1000, height: 800, minWidth: 300, minHeight: 300)
        // The smallest region wins over a fifth (200x160).
        #expect(Self.rect(CaptureDevice.region(around: CGPoint(x: 0, y: 0), in: window)) == [100, 50, 300, 300])
        #expect(Self.rect(CaptureDevice.region(around: CGPoint(x: 1, y: 1), in: window)) == [800, 550, 300, 300])
        #expect(Self.rect(CaptureDevice.region(around: CGPoint(x: 0.5, y: 0), in: window)) == [450, 50, 300, 300])
        // A smallest region larger than the window: the whole window.
        let tiny = Limits(left: 0, top: 0, width: 100, height: 80, minWidth: 160, minHeight: 120)
        #expect(Self.rect(CaptureDevice.region(around: CGPoint(x: 0.9, y: 0.1), in: tiny)) == [0, 0, 100, 80])
    }

    @Test func theOtherOperationKeepsItsBitOnlyWhileTheRegionStays() {
        let exposure: UInt32 = 1 << 0, whiteBalance: UInt32 = 1 << 2, focus: UInt32 = 1 << 3
        let current = exposure | whiteBalance
        #expect(CaptureDevice.regionAutoBits(current: current, bit: focus, other: exposure, regionMoved: true) == whiteBalance | focus)
        #expect(
            CaptureDevice.regionAutoBits(current: current, bit: focus, other: exposure, regionMoved: false)
                == whiteBalance | focus | exposure)
        #expect(CaptureDevice.regionAutoBits(current: 0, bit: exposure, other: focus, regionMoved: false) == exposure)
    }
}
