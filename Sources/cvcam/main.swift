import CaptureKit
print("cvcam")
