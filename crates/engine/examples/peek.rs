fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut s = vramfit_engine::Scenario::default();
    for a in &args { let (k, v) = a.split_once('=').unwrap(); s.set(k, v).unwrap(); }
    let e = vramfit_engine::estimate(&s).unwrap();
    for c in &e.components { println!("{:16} {:>12.3} GB  {}", c.id, c.bytes.gb(), c.formula); }
    println!("total {:.3} GB alloc {:.3} usable {:.3} {:?}", e.total_bytes.gb(), e.allocated_bytes().gb(), e.usable_bytes.gb(), e.verdict);
}
