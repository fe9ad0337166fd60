#[cfg(test)]
mod t {
    use super::super::harness::*;
    use crate::time::{Rate, SimDuration};

    #[test]
    fn scratch_tiny_buffer() {
        let cc = std::env::var("CC").unwrap_or("reno".into());
        let lim: usize = std::env::var("LIM").map(|v| v.parse().unwrap()).unwrap_or(10);
        let mut c = cfg(&cc);
        c.rmem = [10240, 87380, 52428800];
        c.wmem = [10240, 87380, 52428800];
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.ab.rate = Some(Rate(100_000_000));
        p.ab.limit = lim;
        p.check = false;
        p.to_write = u64::MAX;
        p.run_for(SimDuration::from_millis(10_000));
        let mut last = 0;
        for s in &p.samples {
            let t = s.t.as_nanos() / 100_000_000;
            if t != last { eprintln!("{} cwnd {} ssth {} st {}", s.t, s.cwnd, s.ssthresh, s.ca_state); last = t; }
        }
        eprintln!("read {} -> {:.2} Mbit/s qdrops {} maxq {}", p.read, p.read as f64 * 8.0 / 10.0 / 1e6, p.ab.queue_drops, p.ab.max_queue);
    }
}
