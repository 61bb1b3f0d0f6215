import json, subprocess, sys, time, urllib.error, urllib.request

PORT = 18744
server = subprocess.Popen([sys.executable, "/app/kv_server.py", str(PORT)])
base = f"http://127.0.0.1:{PORT}"


def call(method, path, body=None):
    request = urllib.request.Request(base + path, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


try:
    for _ in range(100):  # up to 5 s for the server to listen
        try:
            call("GET", "/stats")
            break
        except OSError:
            time.sleep(0.05)
    for i in range(50):
        assert call("PUT", f"/kv/k{i}", f"value {i}".encode())[0] in (200, 201, 204)
    assert call("GET", "/kv/k7") == (200, b"value 7")
    assert call("DELETE", "/kv/k7")[0] == 204
    assert call("GET", "/kv/k7")[0] == 404
    status, body = call("GET", "/stats")
    assert status == 200 and json.loads(body) == {"keys": 49}, body
    print("server ok")
finally:
    server.kill()
    server.wait()
