// Intentionally empty: libavformat is included by CVBridge/video.cpp only.
