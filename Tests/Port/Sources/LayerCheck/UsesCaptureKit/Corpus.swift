// Tools/check-layers: a client of CaptureKit alone must NOT compile this file. The test corpus
// (CaptureKitTesting) and CaptureVision's `package` seams are out of its sight, so the build fails
// with "cannot find 'QRTestCorpus' in scope" and "cannot find 'CodeImaging' in scope".
import CaptureKit

public func corpusCategories() -> Int { QRTestCorpus.Category.allCases.count }
public let imaging: Any.Type = CodeImaging.self
