/// One CSV line's fields, as Python's `csv` module and llama-bench write them: a field holding a
/// comma or a quote is quoted, with a quote doubled inside (RFC 4180, without embedded newlines).
/// A trailing `\r` (a CRLF file split on `\n`) is not part of the last field.
pub fn csv_fields(line: &str) -> Vec<String> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}

#[cfg(test)]
mod tests {
    use super::csv_fields;

    #[test]
    fn quotes_commas_doubled_quotes_and_crlf() {
        assert_eq!(
            csv_fields(r#"a,"b, c","d ""e""",,"#),
            ["a", "b, c", "d \"e\"", "", ""]
        );
        assert_eq!(csv_fields("gpu,bdf\r"), ["gpu", "bdf"]);
    }
}
