//! The subject CommonName of an X.509 certificate (DER): all the front-proxy check needs from a
//! client certificate rustls has already verified against the requestheader client CA
//! (Kubernetes' requestheader authenticator compares the same field with its allowed names). A
//! few lines of DER walking instead of a certificate parser crate; malformed input gives `None`,
//! never a panic.

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// `[0] EXPLICIT Version`, optional in `TBSCertificate`.
const VERSION: u8 = 0xa0;
/// 2.5.4.3, `id-at-commonName`.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// One DER element of `input`: its tag, its contents and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, rest) = rest.split_at(n);
        let len = bytes
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, rest)
    };
    if rest.len() < len {
        return None;
    }
    let (contents, rest) = rest.split_at(len);
    Some((tag, contents, rest))
}

/// A directory string's text, for the string types Go's `crypto/x509` reads.
fn text(tag: u8, bytes: &[u8]) -> Option<String> {
    match tag {
        // UTF8String, NumericString, PrintableString, IA5String
        0x0c | 0x12 | 0x13 | 0x16 => std::str::from_utf8(bytes).ok().map(str::to_string),
        // T61String: Go reads it as Latin-1.
        0x14 => Some(bytes.iter().map(|&b| char::from(b)).collect()),
        // BMPString: UTF-16BE.
        0x1e if bytes.len().is_multiple_of(2) => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

/// The subject's CommonName (the last one, as Go's `pkix.Name` keeps), or `None` when the
/// certificate has none or is not DER this walk understands.
pub fn common_name(cert_der: &[u8]) -> Option<String> {
    let (tag, certificate, _) = element(cert_der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, tbs, _) = element(certificate)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut rest = tbs;
    let (tag, _, after_version) = element(rest)?;
    if tag == VERSION {
        rest = after_version;
    }
    // serialNumber, signature, issuer, validity; then the subject.
    for _ in 0..4 {
        let (_, _, after) = element(rest)?;
        rest = after;
    }
    let (tag, mut name, _) = element(rest)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut found = None;
    while !name.is_empty() {
        let (tag, mut rdn, after) = element(name)?;
        if tag != SET {
            return None;
        }
        name = after;
        while !rdn.is_empty() {
            let (tag, attribute, after) = element(rdn)?;
            if tag != SEQUENCE {
                return None;
            }
            rdn = after;
            let (tag, oid, value) = element(attribute)?;
            if tag == OID && oid == COMMON_NAME {
                let (tag, bytes, _) = element(value)?;
                found = Some(text(tag, bytes)?);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(names: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (t, v) in names {
            params.distinguished_name.push(t.clone(), *v);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_common_name_is_read() {
        let der = cert(&[
            (rcgen::DnType::OrganizationName, "system:masters"),
            (rcgen::DnType::CommonName, "front-proxy-client"),
        ]);
        assert_eq!(common_name(&der).as_deref(), Some("front-proxy-client"));
    }

    #[test]
    fn no_common_name_is_none() {
        let der = cert(&[(rcgen::DnType::OrganizationName, "o")]);
        assert_eq!(common_name(&der), None);
    }

    #[test]
    fn malformed_input_is_none_never_a_panic() {
        let der = cert(&[(rcgen::DnType::CommonName, "front-proxy-client")]);
        for cut in 0..der.len() {
            assert_eq!(common_name(&der[..cut]), None, "cut at {cut}");
        }
        let mut flipped = der.clone();
        for i in 0..flipped.len() {
            flipped[i] ^= 0xff;
            let _ = common_name(&flipped);
            flipped[i] ^= 0xff;
        }
        assert_eq!(common_name(&[]), None);
        assert_eq!(common_name(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn string_types() {
        assert_eq!(text(0x13, b"abc").as_deref(), Some("abc"));
        assert_eq!(text(0x14, &[0x61, 0xe9]).as_deref(), Some("a\u{e9}"));
        assert_eq!(text(0x1e, &[0x00, 0x61, 0x00, 0x62]).as_deref(), Some("ab"));
        assert_eq!(text(0x1e, &[0x00]), None);
        assert_eq!(text(0x04, b"abc"), None);
    }
}
