// Intentionally empty: zxing-cpp's C++ headers are included by CVBridge's .cpp files only.
