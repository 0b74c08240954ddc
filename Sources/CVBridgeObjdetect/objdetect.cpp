// The objdetect module (libCVBridgeObjdetect.so, see CVBridge/module_api.hpp): YuNet and Haar
// face detection and QR location and drawing (cvb_objdetect.h). OpenCV 4.6's objdetect needs
// dnn, so both load only when one of these is first called.
#include "bridge_internal.hpp"
#include "module_api.hpp"
#include "include/cvb_objdetect_module.h"

#include <opencv2/imgproc.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/objdetect.hpp>

#include <array>
#include <cmath>
#include <vector>

using namespace cvb;

// Either OpenCV's own YuNet 2022mar runner, or a plain network for the 2023 models, which
// OpenCV 4.6's FaceDetectorYN cannot read (other output names); `net` is empty for the former.
struct cvb_yunet {
    cv::Ptr<cv::FaceDetectorYN> detector;
    cv::dnn::Net net;
    cv::Size size;
    float score_threshold;
    float nms_threshold;
    int top_k;
};

struct cvb_cascade {
    cv::CascadeClassifier classifier;
};

namespace {

bool is_yunet_2023(const cv::dnn::Net &net) {
    for (const auto &name : net.getUnconnectedOutLayersNames())
        if (name == "cls_8") return true;
    return false;
}

cvb_yunet *yunet_create(const char *model_path, int32_t width, int32_t height, float score_threshold,
                            float nms_threshold, int32_t top_k, cvb_error *err) {
    return guarded_ptr<cvb_yunet>(err, [&]() -> cvb_yunet * {
        cv::Size size(width, height);
        auto *d = new cvb_yunet();
        d->size = size;
        d->score_threshold = score_threshold;
        d->nms_threshold = nms_threshold;
        d->top_k = top_k;
        cv::dnn::Net net = cv::dnn::readNetFromONNX(model_path);
        if (is_yunet_2023(net)) {
            d->net = net;
            return d;
        }
        d->detector = cv::FaceDetectorYN::create(model_path, "", size, score_threshold, nms_threshold, top_k);
        if (!d->detector) {
            delete d;
            set_error(err, -1, "OpenCV returned no YuNet detector");
            return nullptr;
        }
        return d;
    });
}

void yunet_release(cvb_yunet *detector) { delete detector; }

int32_t yunet_is_2023(const cvb_yunet *detector) { return detector->net.empty() ? 0 : 1; }

// The 2023 models' heads, per stride: cls and obj (sigmoids), bbox (dx, dy, log w, log h in
// strides) and kps (five points in strides), each (1, cells, k). Decoded as OpenCV 4.8's
// FaceDetectorYN does; the frame is padded with black at the bottom and right to the input size
// the caller chose.
cv::Mat detect_2023(cvb_yunet *d, const cv::Mat &image, cv::Size input_size) {
    static const int strides[3] = {8, 16, 32};
    int padded_w = input_size.width, padded_h = input_size.height;
    cv::Mat input = image;
    if (padded_w != image.cols || padded_h != image.rows)
        cv::copyMakeBorder(image, input, 0, padded_h - image.rows, 0, padded_w - image.cols, cv::BORDER_CONSTANT,
                           cv::Scalar::all(0));
    d->net.setInput(cv::dnn::blobFromImage(input));
    static const std::vector<std::string> names = {"cls_8",  "cls_16",  "cls_32",  "obj_8", "obj_16", "obj_32",
                                                   "bbox_8", "bbox_16", "bbox_32", "kps_8", "kps_16", "kps_32"};
    std::vector<cv::Mat> outs;
    d->net.forward(outs, names);
    std::vector<cv::Rect2d> boxes;
    std::vector<float> scores;
    std::vector<std::array<float, CVB_YUNET_ROW>> rows;
    for (int i = 0; i < 3; i++) {
        int s = strides[i], cols = padded_w / s, cells = cols * (padded_h / s);
        const float *cls = outs[i].ptr<float>(), *obj = outs[3 + i].ptr<float>();
        const float *bbox = outs[6 + i].ptr<float>(), *kps = outs[9 + i].ptr<float>();
        if ((int)outs[i].total() < cells || (int)outs[6 + i].total() < cells * 4 || (int)outs[9 + i].total() < cells * 10)
            throw std::runtime_error("the YuNet 2023 model's outputs do not match the input size");
        for (int cell = 0; cell < cells; cell++) {
            float score = std::sqrt(std::min(1.f, std::max(0.f, cls[cell])) * std::min(1.f, std::max(0.f, obj[cell])));
            if (score < d->score_threshold) continue;
            int r = cell / cols, c = cell % cols;
            const float *b = bbox + cell * 4, *k = kps + cell * 10;
            float cx = (c + b[0]) * s, cy = (r + b[1]) * s, w = std::exp(b[2]) * s, h = std::exp(b[3]) * s;
            std::array<float, CVB_YUNET_ROW> row;
            row[0] = cx - w / 2;
            row[1] = cy - h / 2;
            row[2] = w;
            row[3] = h;
            for (int p = 0; p < 5; p++) {
                row[4 + 2 * p] = (k[2 * p] + c) * s;
                row[5 + 2 * p] = (k[2 * p + 1] + r) * s;
            }
            row[14] = score;
            boxes.emplace_back(row[0], row[1], w, h);
            scores.push_back(score);
            rows.push_back(row);
        }
    }
    std::vector<int> keep;
    cv::dnn::NMSBoxes(boxes, scores, d->score_threshold, d->nms_threshold, keep, 1.f, d->top_k);
    cv::Mat faces((int)keep.size(), CVB_YUNET_ROW, CV_32F);
    for (size_t i = 0; i < keep.size(); i++) std::copy(rows[keep[i]].begin(), rows[keep[i]].end(), faces.ptr<float>((int)i));
    return faces;
}

int yunet_detect(cvb_yunet *detector, const cvb_image *image, int32_t input_width, int32_t input_height,
                     float *rows, int32_t capacity, int32_t *count, cvb_error *err) {
    return guarded(err, [&] {
        *count = 0;
        if (image->format != CVB_FORMAT_BGR) {
            set_error(err, -1, "YuNet needs a BGR image");
            return -1;
        }
        cv::Mat m = as_mat(image);
        cv::Size input(input_width, input_height);
        if (input.width < m.cols || input.height < m.rows) {
            set_error(err, -1, "the YuNet input size is smaller than the image");
            return -1;
        }
        cv::Mat faces;
        if (!detector->net.empty()) {
            faces = detect_2023(detector, m, input);
        } else {
            if (input != detector->size) {
                detector->detector->setInputSize(input);
                detector->size = input;
            }
            detector->detector->detect(m, faces);
        }
        if (faces.empty()) return 0;
        cv::Mat f;
        faces.convertTo(f, CV_32F);
        *count = f.rows;
        int n = std::min(f.rows, (int)capacity);
        for (int r = 0; r < n; r++) {
            const float *src = f.ptr<float>(r);
            for (int c = 0; c < CVB_YUNET_ROW && c < f.cols; c++) rows[r * CVB_YUNET_ROW + c] = src[c];
        }
        return 0;
    });
}

cvb_cascade *cascade_create(const char *path, cvb_error *err) {
    return guarded_ptr<cvb_cascade>(err, [&]() -> cvb_cascade * {
        auto *c = new cvb_cascade();
        if (!c->classifier.load(path) || c->classifier.empty()) {
            delete c;
            set_error(err, -1, "OpenCV could not load the file as a cascade classifier");
            return nullptr;
        }
        return c;
    });
}

void cascade_release(cvb_cascade *cascade) { delete cascade; }

int cascade_detect(cvb_cascade *cascade, const cvb_image *image, double scale_factor, int32_t min_neighbours,
                       int32_t min_width, int32_t min_height, int32_t max_width, int32_t max_height,
                       int32_t *rects, int32_t *neighbours, int32_t capacity, int32_t *count, cvb_error *err) {
    return guarded(err, [&] {
        *count = 0;
        cv::Mat g = gray_of(image);
        std::vector<cv::Rect> found;
        std::vector<int> hits;
        cascade->classifier.detectMultiScale(g, found, hits, scale_factor, min_neighbours, 0,
                                             cv::Size(min_width, min_height), cv::Size(max_width, max_height));
        *count = (int32_t)found.size();
        int n = std::min((int)found.size(), (int)capacity);
        for (int i = 0; i < n; i++) {
            rects[i * 4 + 0] = found[i].x;
            rects[i * 4 + 1] = found[i].y;
            rects[i * 4 + 2] = found[i].width;
            rects[i * 4 + 3] = found[i].height;
            neighbours[i] = i < (int)hits.size() ? hits[i] : 0;
        }
        return 0;
    });
}

int32_t qr_locate(const cvb_image *src, int32_t multi, float *quads, int32_t capacity, cvb_error *err) {
    return guarded(err, [&]() -> int {
        cv::QRCodeDetector detector;
        std::vector<cv::Point2f> points;
        bool found = multi ? detector.detectMulti(as_mat(src), points) : detector.detect(as_mat(src), points);
        if (!found) return 0;
        int n = (int)(points.size() / 4);
        for (int i = 0; i < std::min(n, (int)capacity); i++)
            for (int k = 0; k < 4; k++) {
                quads[i * 8 + k * 2] = points[(size_t)(i * 4 + k)].x;
                quads[i * 8 + k * 2 + 1] = points[(size_t)(i * 4 + k)].y;
            }
        return n;
    });
}

cvb_mat *qr_encode(const uint8_t *bytes, size_t length, int32_t version, int32_t correction,
                       cvb_error *err) {
    return guarded_ptr<cvb_mat>(err, [&]() -> cvb_mat * {
        cv::QRCodeEncoder::Params params;
        params.version = version;
        params.correction_level = (cv::QRCodeEncoder::CorrectionLevel)correction;
        params.mode = cv::QRCodeEncoder::MODE_AUTO;
        auto encoder = cv::QRCodeEncoder::create(params);
        cv::Mat out;
        encoder->encode(std::string((const char *)bytes, length), out);
        if (out.empty()) {
            set_error(err, -1, "OpenCV could not encode the payload as a QR code (too long for the version?)");
            return nullptr;
        }
        auto *m = new cvb_mat();
        if (out.channels() != 1) cv::cvtColor(out, m->mat, cv::COLOR_BGR2GRAY);
        else m->mat = out;
        return m;
    });
}

const cvb_objdetect_table table = {
    yunet_create, yunet_release, yunet_is_2023, yunet_detect, cascade_create, cascade_release, cascade_detect,
    qr_locate,    qr_encode,
};

} // namespace

CVB_MODULE_EXPORT const cvb_objdetect_table *cvb_objdetect_module(int abi) {
    return abi == CVB_MODULE_ABI ? &table : nullptr;
}
