import CaptureVision
import Foundation
import Testing

/// `Redaction.redact`: the one function every URL and library message passes before it is shown
/// (issue #30). Each secret here is unique to its test, so the process-wide remembered secrets of
/// other tests cannot make a case pass.
@Suite struct RedactionTests {
    @Test(arguments: [
        ("rtsp://admin:Pw1rtsp@cam.local:554/live", "rtsp://admin:***@cam.local:554/live"),
        ("rtsps://admin:Pw2rtsps@cam/live", "rtsps://admin:***@cam/live"),
        ("http://user:Pw3http@10.0.0.2/mjpg/video.mjpg", "http://user:***@10.0.0.2/mjpg/video.mjpg"),
        ("https://user:Pw4https@cam/mjpg", "https://user:***@cam/mjpg"),
        ("rtmp://user:Pw5rtmp@cam/app/stream", "rtmp://user:***@cam/app/stream"),
        ("mqtt://user:Pw6mqtt@broker:1883", "mqtt://user:***@broker:1883"),
        ("ws://user:Pw7ws@broker/mqtt", "ws://user:***@broker/mqtt"),
        ("udp://user:Pw8udp@239.0.0.1:1234", "udp://user:***@239.0.0.1:1234"),
        // Percent-encoded, and raw @ : / in the password.
        ("rtsp://admin:p%40ss%2Fw%3Ard9@cam/live", "rtsp://admin:***@cam/live"),
        ("rtsp://admin:p@ss:w/rd10@cam/live", "rtsp://admin:***@cam/live"),
        ("rtsp://admin:1234/ab11@cam/live", "rtsp://admin:***@cam/live"),
        // A password with a space, when the text is the URL alone.
        ("rtsp://admin:my secret12@cam/live", "rtsp://admin:***@cam/live"),
        // Query and fragment tokens.
        ("http://cam/snap.jpg?token=Tk13&size=2", "http://cam/snap.jpg?token=***&size=2"),
        ("http://cam/v?user=a&password=Pw14;channel=1", "http://cam/v?user=a&password=***;channel=1"),
        ("https://cam/v?auth=A15&api_key=K15&Signature=S15", "https://cam/v?auth=***&api_key=***&Signature=***"),
        ("https://cam/v#access_token=T16", "https://cam/v#access_token=***"),
        // Nothing to hide.
        ("rtsp://cam.local:554/live", "rtsp://cam.local:554/live"),
        ("https://user@cam/live", "https://user@cam/live"),
        ("synthetic:size=64x48", "synthetic:size=64x48"),
    ])
    func aURLAloneIsRedacted(url: String, shown: String) {
        #expect(Redaction.redact(url) == shown)
    }

    @Test func urlsInsideMessagesAreRedactedAndTheRestKept() {
        let message = "cannot open rtsp://admin:Msg1pw@cam:554/live: Connection refused (see 'http://u:Msg2pw@h/x?token=Msg3'), [tcp @ 0x55]"
        #expect(
            Redaction.redact(message)
                == "cannot open rtsp://admin:***@cam:554/live: Connection refused (see 'http://u:***@h/x?token=***'), [tcp @ 0x55]")
        let lines = "line 1: rtsp://a:Ml1pw@c/x\nline 2: mqtt://b:Ml2pw@d"
        #expect(Redaction.redact(lines) == "line 1: rtsp://a:***@c/x\nline 2: mqtt://b:***@d")
        // URLs without credentials are kept as they are.
        #expect(Redaction.redact("state://ok and xhttp://z") == "state://ok and xhttp://z")
    }

    @Test func rememberedSecretsAreMaskedAnywhereInEveryForm() {
        Redaction.remember("Rem1 s/cr@t")
        #expect(Redaction.redact("FFmpeg said: Rem1 s/cr@t was refused") == "FFmpeg said: *** was refused")
        #expect(Redaction.redact("encoded Rem1%20s%2Fcr%40t here") == "encoded *** here")
        // Too short to mask alone: ordinary words stay.
        Redaction.remember("ab")
        #expect(Redaction.redact("absent about") == "absent about")
        #expect(Redaction.redact("rtsp://al:ab@cam/live") == "rtsp://al:***@cam/live")
    }

    @Test func secretsOfAURLAreRememberedEvenWhenItDoesNotParse() {
        Redaction.remember(secretsIn: "rtsp://admin:Unp4rsed pw@cam/live?token=Unp4rsedTk")
        #expect(Redaction.redact("echo: Unp4rsed pw") == "echo: ***")
        #expect(Redaction.redact("echo: Unp4rsedTk") == "echo: ***")
    }

    @Test func redactingTwiceChangesNothing() {
        for text in ["rtsp://admin:Tw1ce@cam/live is lost; attempt 2", "http://u:Tw2ce@h/p?token=Tw3 and more"] {
            let once = Redaction.redact(text)
            #expect(Redaction.redact(once) == once)
            #expect(!once.contains("Tw"))
        }
    }
}
