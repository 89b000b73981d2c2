-- wrk script: PUT /v1/devices/{random 64-hex token} with a registration body, as the iOS app would.
-- The device API key comes from the environment: PAPERBOY_API_KEY.
local key = os.getenv("PAPERBOY_API_KEY")
local body = '{"environment": "production", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", ' ..
    '"tier": "large", "autoDownload": true, "alertsAuthorized": false, "appVersion": "5.1", ' ..
    '"osVersion": "17.4", "model": "iPad13,1", "locale": "ja_JP"}'
local hex = "0123456789abcdef"
local statuses = {}

function setup(thread)
    thread:set("id", tostring(thread))
end

function init(args)
    math.randomseed(os.time() + tonumber(string.sub(tostring({}), 8), 16) % 100000)
end

request = function()
    local token = {}
    for i = 1, 64 do
        local n = math.random(1, 16)
        token[i] = string.sub(hex, n, n)
    end
    return wrk.format("PUT", "/v1/devices/" .. table.concat(token), {
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
