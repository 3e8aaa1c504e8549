//! Lower-case hexadecimal, for digests and generated secrets.

/// `bytes` as lower-case hexadecimal, two digits a byte.
pub fn lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xF)]));
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_digits_a_byte() {
        assert_eq!(super::lower(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::lower(&[]), "");
    }
}
