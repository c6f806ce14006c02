//! temp
use std::io::Write;
fn main() {
    println!("available_parallelism = {:?}", std::thread::available_parallelism());
    let data = std::fs::read("/tmp/sample.bin").unwrap();
    for threads in [1usize, 2, 3, 4] {
        let t = std::time::Instant::now();
        let mut w = argoexec_archive::ParallelGzWriter::new(Vec::new(), argoexec_archive::GzipOptions { level: 6, block_size: 1 << 20, threads });
        for c in data.chunks(128 * 1024) { w.write_all(c).unwrap(); }
        let out = w.finish().unwrap();
        let s = t.elapsed().as_secs_f64();
        println!("threads {threads}: {:.1} MiB/s, {}", data.len() as f64 / 1048576.0 / s, out.len());
    }
}
