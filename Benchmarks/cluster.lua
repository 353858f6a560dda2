-- wrk script for Benchmarks/cluster.py: replays the request paths in $WRK_PATHS (one a line),
-- each thread from its own offset, and prints one JSON summary line at the end.
local threads = {}

function setup(thread)
    thread:set("id", #threads)
    table.insert(threads, thread)
end

function init(args)
    paths = {}
    for line in io.lines(os.getenv("WRK_PATHS")) do
        paths[#paths + 1] = line
    end
    position = math.floor(#paths * id / 2)
end

function request()
    position = position % #paths + 1
    return wrk.format("GET", paths[position])
end

function done(summary, latency, requests)
    local errors = summary.errors
    io.write(string.format(
        '{"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
        '"p50_ms":%.3f,"p95_ms":%.3f,"p99_ms":%.3f}\n',
        summary.requests, summary.duration, errors.connect, errors.read, errors.write, errors.status,
        errors.timeout, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
        latency:percentile(99) / 1000))
end
