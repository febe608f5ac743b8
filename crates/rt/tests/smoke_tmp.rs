downbeat_rt::install_guard_allocator!();
use downbeat_rt::guard;

#[test]
fn smoke() {
    let r = guard::check(|| 1 + 1);
    println!("{r}");
    let mut v: Vec<u32> = Vec::with_capacity(1);
    v.push(1);
    let r = guard::check(|| v.push(2));
    println!("{r}");
    let r = guard::check(|| std::fs::write("/tmp/guard-smoke", b"hi").unwrap());
    println!("{r}");
    let r = guard::check(|| std::thread::sleep(std::time::Duration::from_millis(2)));
    println!("{r}");
    let r = guard::check(|| std::time::Instant::now());
    println!("{r}");
}
