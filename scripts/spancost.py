"""CPU cost of one enabled OpenTelemetry Python SDK span, as NeMo Gym emits
them: a span with a Gym CLIENT span's attributes, started and ended under a
parent, through the BatchSpanProcessor, encoded to OTLP protobuf by the OTLP
exporter's encoder (the bytes are dropped instead of sent). CPU is
process_time(), so the export thread's encoding counts too."""
import statistics, sys, time
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

class EncodeOnly(SpanExporter):
    def __init__(self): self.bytes = 0
    def export(self, spans):
        self.bytes += len(encode_spans(spans).SerializeToString())
        return SpanExportResult.SUCCESS
    def shutdown(self): pass

def run(n):
    ex = EncodeOnly()
    tp = TracerProvider(resource=Resource.create({"service.name": "nemo-gym/simple_agent", "nemo.gym.server.name": "simple_agent",
        "nemo.gym.server.type": "responses_api_agents", "nemo.run.id": "rg41", "nemo.gym.version": "0.5.1"}))
    tp.add_span_processor(BatchSpanProcessor(ex, max_queue_size=1 << 20, max_export_batch_size=512))
    tr = tp.get_tracer("nemo.gym")
    t0, w0 = time.process_time(), time.perf_counter()
    with tr.start_as_current_span("gym.rollout") as parent:
        for i in range(n):
            with tr.start_as_current_span("HTTP POST", kind=trace.SpanKind.CLIENT, attributes={
                "http.request.method": "POST", "url.full": "http://127.0.0.1:8003/ng-rollout/3-0/get_weather",
                "nemo.gym.rollout.id": "3-0"}) as sp:
                sp.set_attribute("http.response.status_code", 200)
    tp.shutdown()  # flushes: the export thread's encoding is in process_time
    return (time.process_time() - t0) / (n + 1), (time.perf_counter() - w0) / (n + 1), ex.bytes / (n + 1)

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    run(2000)  # warm up
    rs = [run(n) for _ in range(5)]
    cpu = statistics.median(r[0] for r in rs)
    print(f"spans={n} runs=5 cpu_us_per_span_median={cpu*1e6:.1f} min={min(r[0] for r in rs)*1e6:.1f} max={max(r[0] for r in rs)*1e6:.1f} wall_us={statistics.median(r[1] for r in rs)*1e6:.1f} otlp_bytes_per_span={rs[0][2]:.0f}")
