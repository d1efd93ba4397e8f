import Foundation
import HummingbirdTLS
import NIOSSL

/// The listener's TLS configuration from PEM files.
enum TLSSettings {
    static func configuration(_ tls: CustodyServerConfiguration.TLS) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(tls.certificateChain).map {
            NIOSSLCertificateSource.certificate($0)
        }
        let key = try NIOSSLPrivateKey(file: tls.privateKey, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        if let authority = tls.clientCertificateAuthority {
            configuration.trustRoots = .file(authority)
            configuration.certificateVerification = .noHostnameVerification
        }
        return configuration
    }
}
