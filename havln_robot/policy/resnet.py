"""ResNet-50 backbones with the parameter names of the checkpoints the CMA layout was trained with.

torchvision cannot be imported on the robot image, so both backbones are written here:

* :class:`TorchvisionResNet50` -- ImageNet ResNet-50 v1.5 (stride on the 3x3 conv) with torchvision's
  module names (``conv1, bn1, layer1..4.{k}.conv1/bn1/conv2/bn2/conv3/bn3/downsample.0/1``) and BatchNorm;
  the classifier (``fc``) is absent, as in VLN-CE's ``TorchVisionResNet50`` with ``spatial_output=True``
  (He et al., CVPR 2016; torchvision ``models/resnet.py``).
* :class:`DDPPOResNetEncoder` -- the DD-PPO depth encoder of habitat-baselines
  (``rl/ddppo/policy/resnet.py`` + ``resnet_policy.ResNetEncoder``): GroupNorm bottlenecks whose
  branch is ``convs.0..7``, stem ``conv1.0/1``, then a ``compression`` 3x3 conv + GroupNorm(1) to
  2048 / (final spatial)^2 channels (Wijmans et al., ICLR 2020).

Both take channels-first float tensors; shapes are documented per class.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class TVBottleneck(nn.Module):
    """torchvision ``Bottleneck`` (expansion 4, stride on ``conv2``), BatchNorm."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class TorchvisionResNet50(nn.Module):
    """ResNet-50 feature extractor, torchvision parameter names, no ``fc``.

    Input: (B, 3, H, W) float in [0, 1] (VLN-CE feeds ``rgb / 255`` without ImageNet mean/std).
    Output: (B, 2048, H/32, W/32) ``layer4`` features (7x7 for 224x224).
    """

    def __init__(self, layers: tuple[int, int, int, int] = (3, 4, 6, 3)):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.out_channels = 2048

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * 4:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False), nn.BatchNorm2d(planes * 4))
        mods = [TVBottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * 4
        mods += [TVBottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


class GNBottleneck(nn.Module):
    """DD-PPO GroupNorm bottleneck: ``convs`` = [1x1, GN, ReLU, 3x3(stride), GN, ReLU, 1x1, GN]."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, ngroups: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        out = planes * self.expansion
        self.convs = nn.Sequential(
            nn.Conv2d(inplanes, planes, 1, bias=False),
            nn.GroupNorm(ngroups, planes),
            nn.ReLU(True),
            nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False),
            nn.GroupNorm(ngroups, planes),
            nn.ReLU(True),
            nn.Conv2d(planes, out, 1, bias=False),
            nn.GroupNorm(ngroups, out),
        )
        self.relu = nn.ReLU(True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.convs(x) + identity)


class GNResNet(nn.Module):
    """DD-PPO ResNet (GroupNorm), module names ``conv1.0/1``, ``layer1..4``; total stride 32."""

    def __init__(self, in_channels: int, base_planes: int, ngroups: int, layers: tuple[int, int, int, int] = (3, 4, 6, 3)):
        super().__init__()
        self.conv1 = nn.Sequential(
            nn.Conv2d(in_channels, base_planes, 7, stride=2, padding=3, bias=False),
            nn.GroupNorm(ngroups, base_planes),
            nn.ReLU(True),
        )
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.inplanes = base_planes
        self.layer1 = self._make_layer(ngroups, base_planes, layers[0])
        self.layer2 = self._make_layer(ngroups, base_planes * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(ngroups, base_planes * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(ngroups, base_planes * 8, layers[3], stride=2)
        self.final_channels = self.inplanes
        self.final_spatial_compress = 1.0 / 2**5

    def _make_layer(self, ngroups: int, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * 4:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False), nn.GroupNorm(ngroups, planes * 4)
            )
        mods = [GNBottleneck(self.inplanes, planes, ngroups, stride, downsample)]
        self.inplanes = planes * 4
        mods += [GNBottleneck(self.inplanes, planes, ngroups) for _ in range(1, blocks)]
        return nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.conv1(x))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


class DDPPOResNetEncoder(nn.Module):
    """habitat-baselines ``ResNetEncoder`` for a depth-only observation.

    Args:
        input_size: depth image side in pixels (256 in VLN-CE); the encoder halves it with an
            average pool first, so the backbone sees ``input_size / 2``.
        baseplanes: 32 and ngroups: 16 (VLN-CE ``VlnResnetDepthEncoder`` defaults, resnet50).

    Input: (B, 1, S, S) float depth in [0, 1]. Output: (B, C, s, s) with s = int(S/2/32)
    (4 for 256) and C = round(2048 / s^2) (128 for 256).
    """

    def __init__(self, input_size: int = 256, baseplanes: int = 32, ngroups: int = 16):
        super().__init__()
        spatial = input_size // 2
        self.running_mean_and_var = nn.Sequential()  # normalize_visual_inputs=False: no parameters
        self.backbone = GNResNet(1, baseplanes, ngroups)
        final_spatial = int(spatial * self.backbone.final_spatial_compress)
        channels = int(round(2048 / final_spatial**2))
        self.compression = nn.Sequential(
            nn.Conv2d(self.backbone.final_channels, channels, 3, padding=1, bias=False),
            nn.GroupNorm(1, channels),
            nn.ReLU(True),
        )
        self.output_shape = (channels, final_spatial, final_spatial)

    def forward(self, depth: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(depth, 2)
        x = self.running_mean_and_var(x)
        return self.compression(self.backbone(x))
