/// cvcam's version, as `cvcam --version` prints it and Home Assistant's device card shows it.
package enum CVCamVersion {
    package static let string = "0.1.0"
}
