// Intentionally empty: OpenCV's C++ headers are included by CVBridge's .cpp files only.
