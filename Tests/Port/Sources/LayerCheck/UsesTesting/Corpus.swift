// Tools/check-layers: a client of the CaptureKitTesting product sees the test corpus.
import CaptureKitTesting

public func corpusCategories() -> Int { QRTestCorpus.Category.allCases.count }
