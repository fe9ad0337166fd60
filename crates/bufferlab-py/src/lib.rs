//! Thin PyO3 binding of bufferlab-core: JSON strings in and out, one
//! exception per core error kind, the interpreter released while simulating.
//! All parsing, validation in the user's words, and formatting live in the
//! Python package (python/bufferlab); this crate only moves data, and opens
//! the files the core's observers write into (output.rs).

mod heap;
mod output;

#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

use bufferlab_core::time::SimTime;
use bufferlab_core::{Error, TcError};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _core,
    CoreError,
    PyException,
    "Base class of the engine's errors."
);
create_exception!(
    _core,
    ConfigError,
    CoreError,
    "The simulator config (topology, options) is invalid."
);
create_exception!(
    _core,
    TcRequestError,
    CoreError,
    "A tc request failed; the message is tc's own text."
);
create_exception!(
    _core,
    AppError,
    CoreError,
    "An application could not be started or addressed."
);
create_exception!(
    _core,
    SchemaError,
    CoreError,
    "JSON handed to the engine does not match its schema."
);
create_exception!(
    _core,
    StalledError,
    CoreError,
    "Simulated time cannot advance (a TCP path with no delay and no rate)."
);

/// The single map from core errors to Python exceptions.
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Config(_) => ConfigError::new_err(msg),
        Error::Tc(
            TcError::Exists
            | TcError::NotFound
            | TcError::Invalid(_)
            | TcError::NoDevice(_)
            | TcError::Extack(_)
            | TcError::Busy
            | TcError::NotSupported(_)
            | TcError::FilterExtack(_)
            | TcError::FilterErrno(_),
        ) => TcRequestError::new_err(msg),
        Error::App(_) => AppError::new_err(msg),
        Error::Schema(_) => SchemaError::new_err(msg),
        Error::Stalled(_) => StalledError::new_err(msg),
    }
}

fn json_out(v: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| SchemaError::new_err(e.to_string()))
}

/// Events between two checks for signals in `Simulator.run`: about 20 ms of
/// wall time at the engine's 3-4 M events/s.
const SIGNAL_CHECK_EVENTS: u64 = 65_536;

/// One simulated network. See docs/internals.md for every method's JSON.
#[pyclass(module = "bufferlab._core")]
struct Simulator {
    inner: bufferlab_core::Simulator,
}

#[pymethods]
impl Simulator {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        Ok(Simulator {
            inner: bufferlab_core::Simulator::from_json(config_json).map_err(to_py)?,
        })
    }

    fn now_ns(&self) -> u64 {
        self.inner.now().as_nanos()
    }

    fn tc(&mut self, request_json: &str) -> PyResult<()> {
        let req = serde_json::from_str(request_json)
            .map_err(|e| SchemaError::new_err(format!("tc request: {e}")))?;
        self.inner.tc(&req).map_err(to_py)
    }

    /// `tc class …`: the kernel's warning for `tc` to print, if any.
    fn tc_class(&mut self, request_json: &str) -> PyResult<Option<String>> {
        let req = serde_json::from_str(request_json)
            .map_err(|e| SchemaError::new_err(format!("tc class request: {e}")))?;
        self.inner.tc_class(&req).map_err(to_py)
    }

    /// `tc filter …` on a qdisc's u32 filters.
    fn tc_filter(&mut self, request_json: &str) -> PyResult<()> {
        let req = serde_json::from_str(request_json)
            .map_err(|e| SchemaError::new_err(format!("tc filter request: {e}")))?;
        self.inner.tc_filter(&req).map_err(to_py)
    }

    /// `tc filter …` at an ingress/clsact hook.
    fn tc_hook_filter(&mut self, request_json: &str) -> PyResult<()> {
        let req = serde_json::from_str(request_json)
            .map_err(|e| SchemaError::new_err(format!("tc filter request: {e}")))?;
        self.inner.tc_hook_filter(&req).map_err(to_py)
    }

    /// `tc filter show dev DEV [parent P]` (JSON list of the qdisc's
    /// `tcf_proto`s, qdisc/filter_show.rs).
    #[pyo3(signature = (dev, parent=None))]
    fn filter_show(&mut self, dev: &str, parent: Option<u32>) -> PyResult<String> {
        json_out(&self.inner.filter_show(dev, parent).map_err(to_py)?)
    }

    fn qdisc_show(&self, dev: &str) -> PyResult<String> {
        json_out(&self.inner.qdisc_show(dev).map_err(to_py)?)
    }

    /// `qdisc_show` with the classes only `tc class show` asks for (cake's flows).
    fn class_show(&self, dev: &str) -> PyResult<String> {
        json_out(&self.inner.class_show(dev).map_err(to_py)?)
    }

    /// `node`'s sockets as `ss -a` lists them (JSON list).
    fn sockets(&self, node: &str) -> PyResult<String> {
        json_out(&self.inner.sockets(node).map_err(to_py)?)
    }

    /// `node`'s SNMP counters, `{"Ip": {...}, "Tcp": {...}, ...}`.
    fn netstat(&self, node: &str) -> PyResult<String> {
        json_out(&self.inner.netstat(node).map_err(to_py)?)
    }

    /// `ip link add NAME type ifb` in `node`'s namespace.
    fn add_ifb(&mut self, node: &str, name: &str) -> PyResult<()> {
        self.inner.add_ifb(node, name).map_err(to_py)
    }

    /// `ip link set DEV up|down`.
    fn set_link_up(&mut self, dev: &str, up: bool) -> PyResult<()> {
        self.inner.set_link_up(dev, up).map_err(to_py)
    }

    fn set_offload(&mut self, dev: &str, feature: &str, on: bool) -> PyResult<()> {
        self.inner.set_offload(dev, feature, on).map_err(to_py)
    }

    fn offloads(&self, dev: &str) -> PyResult<String> {
        json_out(&self.inner.offloads(dev).map_err(to_py)?)
    }

    fn start_app(&mut self, node: &str, spec_json: &str) -> PyResult<u32> {
        self.inner.start_app(node, spec_json).map_err(to_py)
    }

    fn peak_backlogs(&self) -> PyResult<String> {
        json_out(&self.inner.peak_backlogs())
    }

    fn reset_peak_backlogs(&mut self) {
        self.inner.reset_peak_backlogs()
    }

    fn set_listener_tcp(&mut self, app_id: u32, spec_json: &str) -> PyResult<()> {
        self.inner
            .set_listener_tcp(app_id, spec_json)
            .map_err(to_py)
    }

    fn stop_app(&mut self, app_id: u32) -> PyResult<()> {
        self.inner.stop_app(app_id).map_err(to_py)
    }

    fn app_finished(&self, app_id: u32) -> PyResult<bool> {
        self.inner.app_finished(app_id).map_err(to_py)
    }

    /// Advance to `until_ns` or until applications finish (their ids are
    /// returned). The interpreter is released meanwhile, in stretches of at
    /// most `SIGNAL_CHECK_EVENTS` events and zero-delay arrivals (so also while
    /// simulated time stands still); between them pending signals are
    /// handled (`py.check_signals()`), so Ctrl-C or SIGTERM raises here within
    /// milliseconds. With `max_events`, returns `None` once that many events
    /// were dispatched without the run being over, so the caller can check its
    /// own limits (wall clock) however dense the traffic. Stretches resume
    /// exactly, so results do not depend on them.
    #[pyo3(signature = (until_ns, max_events=None))]
    fn run(
        &mut self,
        py: Python<'_>,
        until_ns: u64,
        max_events: Option<u64>,
    ) -> PyResult<Option<Vec<u32>>> {
        let until = SimTime::from_nanos(until_ns);
        let mut left = max_events.unwrap_or(u64::MAX);
        while left > 0 {
            let inner = &mut self.inner;
            let stretch = left.min(SIGNAL_CHECK_EVENTS);
            let done = py
                .detach(|| inner.run_bounded(until, stretch))
                .map_err(to_py)?;
            if done.is_some() {
                return Ok(done);
            }
            if max_events.is_some() {
                left -= stretch;
            }
            py.check_signals()?;
        }
        Ok(None)
    }

    fn next_event_ns(&self) -> Option<u64> {
        self.inner.next_event_time().map(|t| t.as_nanos())
    }

    fn events_processed(&self) -> u64 {
        self.inner.events_processed()
    }

    fn app_result(&self, app_id: u32) -> PyResult<String> {
        json_out(&self.inner.app_result(app_id).map_err(to_py)?)
    }

    fn summary(&self) -> PyResult<String> {
        json_out(&self.inner.summary())
    }

    /// Open a packet capture (spec: docs/internals.md "Observation").
    fn capture_start(&mut self, spec_json: &str) -> PyResult<u32> {
        self.inner
            .capture_start(spec_json, output::open)
            .map_err(to_py)
    }

    fn capture_stop(&mut self, capture_id: u32) -> PyResult<String> {
        json_out(&self.inner.capture_stop(capture_id).map_err(to_py)?)
    }

    fn capture_done(&self, capture_id: u32) -> bool {
        self.inner.capture_done(capture_id)
    }

    fn take_finished_captures(&mut self) -> Vec<u32> {
        self.inner.take_finished_captures()
    }

    /// Stream every change of `dev`'s root qdisc to `path` (binary records).
    fn trace_start(&mut self, dev: &str, path: &str, min_interval_ns: u64) -> PyResult<u32> {
        self.inner
            .trace_start(dev, path, min_interval_ns, output::open)
            .map_err(to_py)
    }

    fn trace_stop(&mut self, trace_id: u32) -> PyResult<String> {
        json_out(&self.inner.trace_stop(trace_id).map_err(to_py)?)
    }
}

/// The JSON Schema (draft 2020-12) of every request the engine takes, with
/// one `$defs` entry per entry point (docs/internals.md "Request schema").
#[pyfunction]
fn schema() -> PyResult<String> {
    json_out(&bufferlab_core::schema::input_schema())
}

/// What the engine registers: congestion controls, qdisc kinds and their
/// class facts (`schema::Registry`; docs/internals.md "Registries").
#[pyfunction]
fn registry() -> PyResult<String> {
    json_out(&bufferlab_core::schema::registry())
}

/// The engine's heap: (live bytes, peak bytes since the last
/// `heap_reset_peak`), for the benchmarks' memory figures.
#[pyfunction]
fn heap_stats() -> (usize, usize) {
    heap::stats()
}

/// Restart the peak from the current live heap.
#[pyfunction]
fn heap_reset_peak() {
    heap::reset_peak()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulator>()?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    m.add_function(wrap_pyfunction!(heap_stats, m)?)?;
    m.add_function(wrap_pyfunction!(heap_reset_peak, m)?)?;
    m.add("CoreError", m.py().get_type::<CoreError>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("TcRequestError", m.py().get_type::<TcRequestError>())?;
    m.add("AppError", m.py().get_type::<AppError>())?;
    m.add("SchemaError", m.py().get_type::<SchemaError>())?;
    m.add("StalledError", m.py().get_type::<StalledError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
