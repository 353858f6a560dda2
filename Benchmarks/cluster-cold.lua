-- wrk script for Benchmarks/cluster.py's cold pass: every path in $WRK_PATHS exactly once. Run
-- with one connection a thread (-t N -c N), so each thread's responses come in its requests'
-- order; thread k takes lines k+1, k+1+N, … When a thread has its last answer it writes
-- "<first request> <last answer> <paths> <non-200>" (CLOCK_MONOTONIC seconds) to
-- $WRK_MARKER.<k> and stops; cluster.py waits for every marker, then ends wrk.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } cold_timespec;
int clock_gettime(int clock, cold_timespec *time);
]]

local function now()
    local time = ffi.new("cold_timespec")
    ffi.C.clock_gettime(1, time)
    return tonumber(time.tv_sec) + tonumber(time.tv_nsec) / 1e9
end

local created = 0

function setup(thread)
    thread:set("id", created)
    created = created + 1
end

function init(args)
    local count = tonumber(os.getenv("WRK_THREADS"))
    paths = {}
    local index = 0
    for line in io.lines(os.getenv("WRK_PATHS")) do
        if index % count == id then paths[#paths + 1] = line end
        index = index + 1
    end
    issued, answered, failed = 0, 0, 0
end

function request()
    if issued == 0 then started = now() end
    issued = issued + 1
    return wrk.format("GET", paths[math.min(issued, #paths)])
end

function response(status, headers, body)
    answered = answered + 1
    if answered > #paths then return end
    if status ~= 200 then failed = failed + 1 end
    if answered == #paths then
        local marker = io.open(os.getenv("WRK_MARKER") .. "." .. id, "w")
        marker:write(string.format("%.6f %.6f %d %d\n", started, now(), #paths, failed))
        marker:close()
        wrk.thread:stop()
    end
end
