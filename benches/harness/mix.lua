-- wrk script for load.sh: a mix of reads of a closed and the open hour (some of them
-- revalidations answering 304) and ingest batches of unique IDs.
--   wrk -s mix.lua URL -- CLOSED_PATH OPEN_PATH TOKEN CLOSED_ETAG PREFIX BATCH [MIX]
-- MIX weighs GET closed hour, GET open hour, conditional GET of the closed hour (304)
-- and POST /updates of BATCH IDs; the default 8,8,2,2 means, out of every 20 requests,
-- 8 closed, 8 open, 2 revalidations and 2 ingests.

local closed, open, token, etag, prefix, batch
local w = { 8, 8, 2, 2 }
local n = 0

-- wrk runs one Lua state per thread: number them so IDs are unique across threads.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  closed, open, token, etag, prefix = args[1], args[2], args[3], args[4], args[5]
  batch = tonumber(args[6]) or 100
  prefix = prefix .. "-" .. tostring(tid or 0)
  if args[7] then
    local i = 1
    for v in string.gmatch(args[7], "%d+") do
      w[i] = tonumber(v)
      i = i + 1
    end
  end
end

local gzip = { ["Accept-Encoding"] = "gzip" }
local revalidate = { ["Accept-Encoding"] = "gzip" }

function request()
  n = n + 1
  local slot = n % (w[1] + w[2] + w[3] + w[4])
  if slot < w[1] then
    return wrk.format("GET", closed, gzip)
  elseif slot < w[1] + w[2] then
    return wrk.format("GET", open, gzip)
  elseif slot < w[1] + w[2] + w[3] then
    revalidate["If-None-Match"] = etag
    return wrk.format("GET", closed, revalidate)
  end
  local ids = {}
  for i = 1, batch do
    ids[i] = prefix .. ":" .. n .. ":" .. i
  end
  return wrk.format("POST", "/updates", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "text/plain",
  }, table.concat(ids, "\n"))
end
