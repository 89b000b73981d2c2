-- wrk script: POST /v1/devices/{token}/receipts for a random device of a token list, as the iOS app does after
-- a background push. Environment: PAPERBOY_API_KEY, PAPERBOY_EDITION (the edition's id), PAPERBOY_TOKENS (a file
-- of hex tokens, one a line).
local key = os.getenv("PAPERBOY_API_KEY")
local edition = os.getenv("PAPERBOY_EDITION")
local body = '{"editionId": "' .. edition .. '", "result": "newData", "bytes": 52428800, "seconds": 4.5}'
local tokens = {}
local statuses = {}

function init(args)
    for line in io.lines(os.getenv("PAPERBOY_TOKENS")) do tokens[#tokens + 1] = line end
    math.randomseed(os.time() + tonumber(string.sub(tostring({}), 8), 16) % 100000)
end

request = function()
    return wrk.format("POST", "/v1/devices/" .. tokens[math.random(1, #tokens)] .. "/receipts", {
        ["X-API-Key"] = key,
        ["Content-Type"] = "application/json",
    }, body)
end

response = function(status, headers, body)
    if status ~= 201 and status ~= 200 then
        statuses[status] = (statuses[status] or 0) + 1
        if statuses[status] == 1 then io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n") end
    end
end
