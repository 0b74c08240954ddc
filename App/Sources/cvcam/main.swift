// The cvcam executable: everything it does is in CVCamCommands (argument parsing and wiring),
// CaptureJobs, CaptureServe and CapturePreview, so the fuzzer and the tests parse exactly what
// the tool parses and an app can embed the daemon or the preview.
import CVCamCommands

CVCam.main()
