import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' TCP client side: a connection to 127.0.0.1 whose reads give up after a timeout,
/// so a server that never answers fails a test instead of hanging it.
package enum LoopbackSocket {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    /// A connected descriptor to 127.0.0.1:`port` (the caller closes it); reads time out after
    /// `receiveTimeout` seconds.
    package static func connect(port: Int, receiveTimeout: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(error)")
        }
        return fd
    }
}
